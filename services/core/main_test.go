package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(bad, []byte("defaults:\n  agent: noor\n  cooldwn: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"arguments", []string{"core", "--port=1"}, nil, 2, `unknown argument "--port=1": the configuration is the environment`},
		{"malformed duration", nil, map[string]string{"AGENT_CALL_TIMEOUT": "10"}, 1, `AGENT_CALL_TIMEOUT: malformed duration "10"`},
		{"timeout not below cooldown", nil, map[string]string{"AGENT_CALL_TIMEOUT": "45m", "ALERT_COOLDOWN": "30m", "AUTH_TOKEN": "t"}, 1, "AGENT_CALL_TIMEOUT (45m0s) must be less than ALERT_COOLDOWN (30m0s)"},
		{"routes file line", nil, map[string]string{"ROUTES_FILE": bad, "AUTH_TOKEN": "t"}, 1, bad + `:3: unknown key "cooldwn" in defaults`},
		{"routes file missing", nil, map[string]string{"ROUTES_FILE": filepath.Join(dir, "nope.yaml"), "AUTH_TOKEN": "t"}, 1, "ROUTES_FILE: open"},
		{"unknown peer", nil, map[string]string{"AGENT_PEERS": "zed=http://x", "AUTH_TOKEN": "t"}, 1, `AGENT_PEERS: entry "zed=http://x": unknown agent "zed"`},
		{"listen address", nil, map[string]string{"LISTEN_ADDR": "256.0.0.1:99999", "AUTH_TOKEN": "t"}, 1, "LISTEN_ADDR 256.0.0.1:99999"},
		// Closed by default (issue 31, cases 1 and 2).
		{"no token", nil, map[string]string{}, 1, "AUTH_TOKEN is not set"},
		{"read token alone", nil, map[string]string{"AUTH_READ_TOKEN": "r"}, 1, "AUTH_READ_TOKEN is set without AUTH_TOKEN"},
		{"auth disabled with a token", nil, map[string]string{"AUTH_DISABLED": "true", "AUTH_TOKEN": "t"}, 1, "AUTH_DISABLED is true but AUTH_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr lockedBuffer
			args := tt.args
			if args == nil {
				args = []string{"core"}
			}
			code := run(context.Background(), args, func(k string) string { return tt.env[k] }, nil, &stderr, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	serve(t, map[string]string{"AGENT_PEERS": "noor=http://127.0.0.1:1", "AUTH_TOKEN": "t"}, func(addr string) {
		resp, err := http.Get(fmt.Sprintf("http://%s/api/v1/alerts", addr))
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("auth not enforced: %v %v", err, resp)
		}
		resp.Body.Close()
	}, `"msg":"core listening"`, `"msg":"shutting down"`, `"agent_call_timeout":600`)
}

// TestRunFallsOpenWithoutDatabase: an unreachable DATABASE_URL does not
// stop the core; it serves from memory and /ready says why.
func TestRunFallsOpenWithoutDatabase(t *testing.T) {
	t.Parallel()
	serve(t, map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/test?sslmode=disable"}, func(addr string) {
		resp, err := http.Get(fmt.Sprintf("http://%s/ready", addr))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ready map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || ready["store"] != "memory" || !strings.HasPrefix(fmt.Sprint(ready["store_state"]), "degraded: ") {
			t.Fatalf("ready: %d %v", resp.StatusCode, ready)
		}
	})
}

// TestReadyFailsOnAnUnusableDatabase: a DATABASE_URL naming a database
// that does not exist is refused by Postgres — not ready even for one
// replica; an unreachable one is not ready when several replicas share it.
func TestReadyFailsOnAnUnusableDatabase(t *testing.T) {
	t.Parallel()
	base := pgtest.Need(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/kubecrew_no_such_database"
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no such database", map[string]string{"DATABASE_URL": u.String()}, "kubecrew_no_such_database\" does not exist"},
		{"unreachable, two replicas", map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "CORE_REPLICAS": "2"}, "CORE_REPLICAS=2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			serveUntil(t, tt.env, func(code int) bool { return code != 0 }, func(addr string) {
				resp, err := http.Get(fmt.Sprintf("http://%s/ready", addr))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var ready struct {
					Status, Error string
					Failing       []struct{ Dependency, Error string }
				}
				if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusServiceUnavailable || ready.Status != "not ready" || len(ready.Failing) != 1 ||
					ready.Failing[0].Dependency != "store" || !strings.Contains(ready.Error, tt.want) {
					t.Fatalf("ready: %d %+v; want 503 naming the store and %s", resp.StatusCode, ready, tt.want)
				}
			})
		})
	}
	// READY_REQUIRE=none: reported, still ready.
	serve(t, map[string]string{"DATABASE_URL": u.String(), "READY_REQUIRE": "none"}, func(string) {})
}

// serve runs the core with env until it is ready, calls check, cancels it
// and checks it exits 0 having logged every want.
func serve(t *testing.T, env map[string]string, check func(addr string), want ...string) {
	t.Helper()
	serveUntil(t, env, func(code int) bool { return code == 200 }, check, want...)
}

// serveUntil is serve with its own test of the /ready status code (0: no
// answer yet).
func serveUntil(t *testing.T, env map[string]string, up func(code int) bool, check func(addr string), want ...string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env["LISTEN_ADDR"] = addr
	if env["AUTH_TOKEN"] == "" && env["AUTH_READ_TOKEN"] == "" && env["AUTH_DISABLED"] == "" {
		env["AUTH_DISABLED"] = "true" // a laptop's core, unless the test is about authentication
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"core"}, func(k string) string { return env[k] }, []string{"ALERT_COOLDOWNS=1h"}, &stderr, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://%s/ready", addr))
		code := 0
		if err == nil {
			resp.Body.Close()
			code = resp.StatusCode
		}
		if up(code) {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("core not ready: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(addr)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	logs := stderr.String()
	for _, want := range want {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

// --help lists every setting with its default; --version names the build;
// a misspelt setting is warned about at start and listed by GET /info,
// whose settings hide the secrets.
func TestHelpVersionInfoAndTypos(t *testing.T) {
	t.Parallel()
	var out, errOut lockedBuffer
	if code := run(context.Background(), []string{"core", "--help"}, nil, nil, &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, s := range config.Specs {
		if !strings.Contains(out.String(), s.Name) {
			t.Errorf("--help lacks %s", s.Name)
		}
	}
	var ver lockedBuffer
	if code := run(context.Background(), []string{"core", "--version"}, nil, nil, &ver, &errOut); code != 0 || !strings.HasPrefix(ver.String(), "core ") {
		t.Errorf("--version = %d %q", code, ver.String())
	}
	serve(t, map[string]string{"AGENT_PEERS": "noor=http://127.0.0.1:1", "AUTH_TOKEN": "t0ken"}, func(addr string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/info", nil)
		req.Header.Set("Authorization", "Bearer t0ken")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info struct {
			Settings        map[string]config.Setting `json:"settings"`
			UnknownSettings []struct {
				Name       string `json:"name"`
				DidYouMean string `json:"did_you_mean"`
			} `json:"unknown_settings"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/info: %d %v", resp.StatusCode, err)
		}
		if len(info.UnknownSettings) != 1 || info.UnknownSettings[0].DidYouMean != "ALERT_COOLDOWN" {
			t.Errorf("unknown_settings = %+v", info.UnknownSettings)
		}
		if s := info.Settings["AUTH_TOKEN"]; strings.Contains(s.Value, "t0ken") || s.Source != "env" {
			t.Errorf("AUTH_TOKEN shown as %+v", s)
		}
		if s := info.Settings["ALERT_COOLDOWN"]; s.Value != "30m0s" || s.Source != "default" {
			t.Errorf("ALERT_COOLDOWN = %+v", s)
		}
	}, "ALERT_COOLDOWNS is not a setting (did you mean ALERT_COOLDOWN?)")
}

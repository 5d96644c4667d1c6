package app_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/api/apitest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// startTimed starts a core on loopback through Start, with timeouts t.
func startTimed(t *testing.T, to kapi.Timeouts) (*app.App, string) {
	t.Helper()
	ag := agenttest.New(t, "platform-sre")
	env := map[string]string{"AGENT_PEERS": "platform-sre=" + ag.URL(), "PEER_URL_TEMPLATE": "http://127.0.0.1:1/{slug}",
		"AGENT_CALL_TIMEOUT": "10s", "LISTEN_ADDR": "127.0.0.1:0"}
	laptop(env) // fail closed: AUTH_DISABLED=true, as every test core
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	core, err := app.New(cfg, nil, app.Deps{Store: store.NewMemory(time.Now), Log: zaptest.NewLogger(t), MaintainEvery: time.Hour, Timeouts: &to})
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
	})
	return core, core.Addr()
}

// TestCoreSlowClientsAreCut (docs/MANUAL.md, "Authentication"): the core's server
// cuts a client that dribbles its headers or a webhook body, one idle
// between requests, and refuses headers past the limit (issue #31: the
// header limit was net/http's 1 MiB and nothing bounded a write).
func TestCoreSlowClientsAreCut(t *testing.T) {
	_, addr := startTimed(t, kapi.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond, Write: 2 * time.Second,
		Idle: 300 * time.Millisecond, MaxHeaderBytes: 4 << 10})
	const within = 10 * time.Second // far past every timeout above
	for _, tc := range []struct {
		name string
		d    apitest.Dribble
		want string
	}{
		{"headers dribbled", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\n", Drip: "X-Slow: aaaaaaaa\r\n", Every: 50 * time.Millisecond}, ""},
		{"webhook body dribbled", apitest.Dribble{Prefix: "POST /api/v1/alerts HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", Drip: " ", Every: 50 * time.Millisecond}, ""},
		{"idle after a request", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\n\r\n"}, "200 OK"},
		{"headers past the limit", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"}, "431"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := apitest.AssertCut(t, addr, tc.d, within)
			if !strings.Contains(got, tc.want) {
				t.Errorf("answer before the cut = %.200q, want %q in it", got, tc.want)
			}
		})
	}
}

// TestEventStreamOutlivesWriteTimeout: the event stream is long-lived, so
// it sets a deadline per write instead of living under the server's
// WriteTimeout: an event sent after that timeout still arrives.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	const write = 300 * time.Millisecond
	_, addr := startTimed(t, kapi.Timeouts{ReadHeader: time.Second, Read: time.Second, Write: write, Idle: time.Second, MaxHeaderBytes: 4 << 10})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	// What is tested is time passing, not readiness: the stream's first
	// write is done; the next comes after the server's WriteTimeout.
	time.Sleep(3 * write)
	if code, b := call(t, http.MethodPost, "http://"+addr+"/api/v1/alerts", webhookBody(alert("fp-late", "KubePodOOMKilled", "shop", "firing"))); code != 200 {
		t.Fatalf("webhook = %d %s", code, b)
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the late event: %v", err)
		}
		if strings.HasPrefix(line, "event: decision") {
			return
		}
	}
}

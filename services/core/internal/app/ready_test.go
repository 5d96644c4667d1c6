package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// TestReadyWithoutATokenNamesNoAddress: two replicas whose Postgres is
// unreachable are not ready; /ready without a token says the store fails,
// never the database's user, host, port or name, which the token's holder
// still reads (issue 31, case 6).
func TestReadyWithoutATokenNamesNoAddress(t *testing.T) {
	t.Parallel()
	agent := agenttest.New(t, "platform-sre")
	env := map[string]string{"AGENT_PEERS": "platform-sre=" + agent.URL(), "PEER_URL_TEMPLATE": "http://127.0.0.1:1/{slug}",
		"CORE_REPLICAS": "2", "AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	sw, err := store.Open(context.Background(), "postgres://kcsecretuser@127.0.0.1:1/kcsecretdb?connect_timeout=1", log,
		store.WithConnectTimeout(time.Second), store.WithOpTimeout(time.Second), store.WithRetryInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	core, err := app.New(cfg, nil, app.Deps{Store: sw, Log: log, MaintainEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	url := startHTTP(t, &testCore{App: core, Store: sw, Agent: agent}) + "/ready"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
		sw.Close()
	})
	for _, tc := range []struct {
		name   string
		header []string
		shown  bool
	}{
		{"no token", nil, false},
		{"a wrong token", []string{"Authorization", "Bearer nope"}, false},
		{"the read token", []string{"Authorization", "Bearer read-s3cret"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(newRequest(t, http.MethodGet, url, nil, tc.header...))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(body)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), `"dependency":"store"`) {
				t.Fatalf("/ready = %d %s, want 503 naming the store", resp.StatusCode, raw)
			}
			leaks := strings.Contains(string(raw), "kcsecretuser") || strings.Contains(string(raw), "kcsecretdb") || strings.Contains(string(raw), "127.0.0.1:1")
			if leaks != tc.shown {
				t.Errorf("the database's address shown: %v, want %v: %s", leaks, tc.shown, raw)
			}
		})
	}
}

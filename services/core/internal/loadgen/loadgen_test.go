package loadgen_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
	"github.com/kubecrew/kubecrew/services/core/internal/loadgen"
)

// The smoke run of make test (the benchmark itself is make bench): 200
// alerts in webhooks of 10 against an in-process core, every one decided.
func TestLoadgenSmoke(t *testing.T) {
	t.Parallel()
	ag := agenttest.New(t, "platform-sre")
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AGENT_PEERS": "platform-sre=" + ag.URL(), "AGENT_CALL_TIMEOUT": "10s", "AUTH_DISABLED": "true"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory(nil)
	core, err := app.New(cfg, nil, app.Deps{Store: st, Log: zap.NewNop(), MaintainEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
	})
	res, err := loadgen.Run(context.Background(), loadgen.Options{Kind: loadgen.Core, URL: srv.URL, Alerts: 20, PerPost: 10, Posts: 20, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Alerts != 200 || res.Posts != 20 || len(res.Latencies) != 20 || res.AlertsPerSecond() <= 0 || res.Percentile(0.99) < res.Percentile(0.5) {
		t.Fatalf("result = %d alerts, %d posts, %d latencies, %.0f/s", res.Alerts, res.Posts, len(res.Latencies), res.AlertsPerSecond())
	}
	counts, err := st.CountDecisions(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	// Queued alerts retried as slots free add decisions of their own.
	if total < 200 || counts[store.DecisionDispatched] == 0 || counts[store.DecisionRejected] != 0 {
		t.Fatalf("decisions = %v; want each of the 200 alerts decided, some dispatched, none rejected", counts)
	}
	// A core that refuses ends the run with its answer.
	_, err = loadgen.Run(context.Background(), loadgen.Options{Kind: loadgen.Core, URL: srv.URL + "/nope", Alerts: 1, PerPost: 1, Posts: 1, Concurrency: 1})
	if err == nil {
		t.Fatal("a 404 went unnoticed")
	}
}

// Both bodies are what their servers take: a webhook (version 4) for the
// core, a list of alerts for Alertmanager's API v2.
func TestBody(t *testing.T) {
	t.Parallel()
	b, err := loadgen.Body(loadgen.Alertmanager, 5, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list) != 4 || list[2].Labels["pod"] != "api-00000" {
		t.Fatalf("alertmanager body: %v %+v", err, list)
	}
	b, err = loadgen.Body(loadgen.Core, 5, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	var wh struct {
		Version string
		Alerts  []struct{ Status, Fingerprint string }
	}
	if err := json.Unmarshal(b, &wh); err != nil || wh.Version != "4" || len(wh.Alerts) != 4 || wh.Alerts[0].Fingerprint == wh.Alerts[1].Fingerprint || wh.Alerts[0].Status != "firing" {
		t.Fatalf("core body: %v %+v", err, wh)
	}
	if _, err := loadgen.Body("prometheus", 1, 0, 1); err == nil {
		t.Fatal("an unknown target kind was accepted")
	}
}

// CPU reads utime+stime: this process has used some.
func TestCPU(t *testing.T) {
	t.Parallel()
	// /proc counts in 10 ms ticks: a test process just started may show
	// none yet, so it works until one is counted (at most 10 s).
	var d time.Duration
	var err error
	sum := sha256.Sum256(nil)
	for deadline := time.Now().Add(10 * time.Second); d == 0 && err == nil && time.Now().Before(deadline); {
		for range 10000 {
			sum = sha256.Sum256(sum[:])
		}
		d, err = loadgen.CPU(os.Getpid())
	}
	if err != nil || d <= 0 {
		t.Fatalf("CPU(self) = %v, %v", d, err)
	}
	if _, err := loadgen.CPU(-1); err == nil {
		t.Fatal("CPU of no process")
	}
}

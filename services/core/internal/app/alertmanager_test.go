package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// flakyStore fails the next n ApplyAlert calls, as a database blip would.
type flakyStore struct {
	store.CoreStore
	fail atomic.Int32
}

func (f *flakyStore) ApplyAlert(ctx context.Context, fp, agent string, fn store.DecideFunc, inv func(store.AlertDecision) *store.Investigation) (store.AlertDecision, error) {
	if f.fail.Add(-1) >= 0 {
		return store.AlertDecision{}, errors.New("injected store failure")
	}
	return f.CoreStore.ApplyAlert(ctx, fp, agent, fn, inv)
}

// alertmanagerBinary finds Debian's prometheus-alertmanager: skip without
// it, fail in CI.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Alertmanager binary (prometheus-alertmanager): install it with hack/alertmanager/install.sh (apt-get install -y prometheus-alertmanager)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAlertmanager runs a real Alertmanager whose only receiver is the
// core's webhook, and returns its base URL.
func startAlertmanager(t *testing.T, coreURL, token string) string {
	t.Helper()
	bin := alertmanagerBinary(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: core
  group_by: [alertname, namespace]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: core
    webhook_configs:
      - url: %s/api/v1/alerts
        send_resolved: true
        http_config:
          authorization:
            credentials: %s
`, coreURL, token)
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Alertmanager cannot be told to bind port 0 and report it, so a free
	// port is picked and may be taken by another process before Alertmanager
	// binds it: then it exits with "address already in use", and it is
	// started again on a fresh port.
	for attempt := 1; ; attempt++ {
		base, ok := runAlertmanager(t, bin, cfgPath, filepath.Join(dir, "data"))
		if ok {
			return base
		}
		if attempt == 5 {
			t.Fatal("alertmanager: its port was taken 5 times in a row")
		}
	}
}

// runAlertmanager starts one Alertmanager on a free port and waits until
// it is ready (ok) or has exited because the port was taken (!ok).
func runAlertmanager(t *testing.T, bin, cfgPath, data string) (base string, ok bool) {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+cfgPath,
		"--storage.path="+data,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--cluster.listen-address=",
		"--log.level=debug",
	)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cancel()
		<-exited
	}
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			cancel()
			if strings.Contains(out.String(), "address already in use") {
				t.Logf("alertmanager: port %d was taken meanwhile; again on a fresh port", port)
				return "", false
			}
			t.Fatalf("alertmanager exited before it was ready:\n%s", out.String())
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("alertmanager not ready after 30s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("alertmanager output:\n%s", out.String())
		}
	})
	return base, true
}

// waitFor polls cond (every 50ms) until it holds or the deadline passes.
// It waits for another process to act, not for time to pass.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postAlerts posts alerts to Alertmanager's API v2.
func postAlerts(t *testing.T, amURL string, alerts ...map[string]any) {
	t.Helper()
	b, _ := json.Marshal(alerts)
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("alertmanager POST /api/v2/alerts: %d", resp.StatusCode)
	}
}

// TestRealAlertmanager drives the core from a real Alertmanager: an alert
// posted to Alertmanager arrives as a webhook, is decided and dispatched to
// the agent; the core's first answer is a 500 (its store fails once), and
// Alertmanager's retry still delivers it — dispatched exactly once; its
// resolution is recorded and never dispatched.
func TestRealAlertmanager(t *testing.T) {
	t.Parallel()
	alertmanagerBinary(t)
	flaky := &flakyStore{CoreStore: store.NewMemory(nil)}
	flaky.fail.Store(1)
	const token = "am-token"
	c := newCore(t, coreOpts{store: flaky, env: map[string]string{"AUTH_TOKEN": token}})
	am := startAlertmanager(t, c.URL, token)

	crash := map[string]any{
		"labels":       map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod", "pod": "api-1", "severity": "critical"},
		"annotations":  map[string]string{"summary": "Pod prod/api-1 is crash looping"},
		"startsAt":     time.Now().UTC().Format(time.RFC3339),
		"generatorURL": "http://prometheus.example/graph",
	}
	postAlerts(t, am, crash)
	waitFor(t, 30*time.Second, "the agent to get the alert", func() bool { return len(c.Agent.Runs()) >= 1 })
	c.WaitIdle()
	run := c.Agent.Runs()[0]
	fp := run.Request.Context["fingerprint"]
	if run.Request.WorkflowType != "alert" || run.Request.Caller != "core" || run.Request.Context["alertname"] != "KubePodCrashLooping" ||
		run.Request.Context["namespace"] != "prod" || !strings.Contains(run.Request.Context["alert"], `"pod":"api-1"`) || len(fp) != 16 {
		t.Fatalf("run request: %+v", run.Request)
	}
	if got := metricValue(t, c.URL, `kubecrew_core_webhook_requests_total{code="500"}`); got != 1 {
		t.Fatalf("webhook 500s = %v, want 1 (the injected store failure)", got)
	}

	// The same alert posted again (Prometheus re-evaluating) changes
	// nothing; a second alert is dispatched; resolving the first records
	// it without a dispatch.
	postAlerts(t, am, crash)
	oom := map[string]any{
		"labels":   map[string]string{"alertname": "KubePodOOMKilled", "namespace": "prod", "pod": "api-2"},
		"startsAt": time.Now().UTC().Format(time.RFC3339),
	}
	postAlerts(t, am, oom)
	waitFor(t, 30*time.Second, "the second alert", func() bool { return len(c.Agent.Runs()) >= 2 })
	resolved := map[string]any{}
	for k, v := range crash {
		resolved[k] = v
	}
	resolved["endsAt"] = time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	postAlerts(t, am, resolved)
	waitFor(t, 30*time.Second, "the resolution", func() bool {
		_, b, _ := do(t, http.MethodGet, c.URL+"/api/v1/alerts?limit=500", nil, "Authorization", "Bearer "+token)
		return strings.Contains(string(b), `"decision":"resolved"`)
	})
	c.WaitIdle()
	if n := c.Agent.RunsFor(fp); n != 1 {
		t.Fatalf("alert %s dispatched %d times, want exactly 1", fp, n)
	}
	if n := len(c.Agent.Runs()); n != 2 {
		t.Fatalf("%d runs, want 2 (one per alert)", n)
	}
	for _, r := range c.Agent.Runs() {
		if r.Authorization != "Bearer "+token {
			t.Errorf("agent call without the bearer token: %q", r.Authorization)
		}
	}
}

// metricValue reads one sample from /metrics (0 when absent).
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	_, b, _ := do(t, http.MethodGet, base+"/metrics", nil)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, series+" ") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimPrefix(l, series+" "), &v); err == nil {
				return v
			}
		}
	}
	return 0
}

// TestRealAlertmanagerBadAlertBlocksNothing: Alertmanager accepts a label
// value holding a control character and groups that alert with a good one;
// the core answers the group 200 — the bad alert rejected with its reason,
// the good one dispatched — so Alertmanager never retries it.
func TestRealAlertmanagerBadAlertBlocksNothing(t *testing.T) {
	t.Parallel()
	alertmanagerBinary(t)
	const token = "am-token"
	c := newCore(t, coreOpts{store: openPG(t, pgSchema(t)), env: map[string]string{"AUTH_TOKEN": token}})
	am := startAlertmanager(t, c.URL, token)
	mk := func(pod string) map[string]any {
		return map[string]any{
			"labels":   map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod", "pod": pod},
			"startsAt": time.Now().UTC().Format(time.RFC3339),
		}
	}
	postAlerts(t, am, mk("api-\x01\x1b[31m"), mk("api-2"))
	var list []byte
	waitFor(t, 30*time.Second, "both alerts decided", func() bool {
		_, list, _ = do(t, http.MethodGet, c.URL+"/api/v1/alerts?limit=500", nil, "Authorization", "Bearer "+token)
		return strings.Contains(string(list), `"decision":"rejected"`) && strings.Contains(string(list), `"decision":"dispatched"`)
	})
	if !strings.Contains(string(list), "label pod holds a control character") {
		t.Errorf("rejection reason missing: %s", list)
	}
	c.WaitIdle()
	if n := len(c.Agent.Runs()); n != 1 || c.Agent.Runs()[0].Request.Context["alert"] == "" || !strings.Contains(c.Agent.Runs()[0].Request.Context["alert"], "api-2") {
		t.Fatalf("agent runs: %d, want one, for api-2", n)
	}
	if got := metricValue(t, c.URL, `kubecrew_core_webhook_requests_total{code="200"}`); got < 1 {
		t.Errorf("webhook 200s = %v", got)
	}
	for _, code := range []string{"400", "500"} {
		if got := metricValue(t, c.URL, `kubecrew_core_webhook_requests_total{code="`+code+`"}`); got != 0 {
			t.Errorf("webhook %s answers = %v, want 0 (Alertmanager would retry or drop the group)", code, got)
		}
	}
}

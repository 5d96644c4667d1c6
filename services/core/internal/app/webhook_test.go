package app_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kubecrew/kubecrew/pkg/httpauth/authtest"
	"github.com/kubecrew/kubecrew/pkg/store"
)

func TestWebhookRejectsBadBodies(t *testing.T) {
	t.Parallel()
	// The cap is a setting (ALERT_WEBHOOK_MAX_BYTES, 32Mi by default).
	c := newCore(t, coreOpts{env: map[string]string{"ALERT_WEBHOOK_MAX_BYTES": "1Mi"}})
	valid := `{"version":"4","status":"firing","receiver":"core","groupKey":"g","alerts":[{"status":"firing","fingerprint":"f1","labels":{"alertname":"A"},"startsAt":"2026-11-30T11:00:00Z","endsAt":"0001-01-01T00:00:00Z"}]}`
	tests := []struct {
		name string
		body string
		code int
		want string
	}{
		{"empty body", ``, 400, "empty body"},
		{"not JSON", `{"version":`, 400, "malformed JSON"},
		{"wrong type", `{"version":4}`, 400, `field "version"`},
		{"trailing data", valid + `{}`, 400, "data after the webhook object"},
		{"missing version", `{"status":"firing","alerts":[]}`, 400, "missing version"},
		{"wrong version", strings.Replace(valid, `"version":"4"`, `"version":"3"`, 1), 400, `unsupported webhook version "3"`},
		{"missing status", strings.Replace(valid, `"status":"firing","receiver"`, `"receiver"`, 1), 400, "missing status"},
		{"unknown status", strings.Replace(valid, `"status":"firing","receiver"`, `"status":"pending","receiver"`, 1), 400, `unknown status "pending"`},
		{"missing alerts", `{"version":"4","status":"firing"}`, 400, "missing alerts"},
		{"empty alerts", `{"version":"4","status":"firing","alerts":[]}`, 400, "alerts is empty"},
		// One alert's own problem rejects that alert alone, with a 200:
		// Alertmanager must not retry what a retry cannot fix.
		{"alert without fingerprint", strings.Replace(valid, `"fingerprint":"f1",`, ``, 1), 200, `"decision":"rejected","agent":"","investigation_id":"","reason":"rejected alerts[0]: fingerprint is blank"`},
		{"alert without alertname", strings.Replace(valid, `"labels":{"alertname":"A"}`, `"labels":{"job":"x"}`, 1), 200, `"reason":"rejected alerts[0]: missing labels.alertname"`},
		{"alert with unknown status", strings.Replace(valid, `"alerts":[{"status":"firing"`, `"alerts":[{"status":"active"`, 1), 200, `"reason":"rejected alerts[0]: unknown status \"active\": want firing or resolved"`},
		{"alert without status", strings.Replace(valid, `"alerts":[{"status":"firing",`, `"alerts":[{`, 1), 200, `"reason":"rejected alerts[0]: missing status"`},
		{"too large", `{"version":"4","pad":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "larger than 1048576 bytes"},
		{"valid", valid, 200, `"decision":"dispatched"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, http.MethodPost, c.URL+"/api/v1/alerts", []byte(tt.body))
			text := string(body)
			if code != 200 {
				text = decode[struct{ Error string }](t, body).Error
			}
			if code != tt.code || !strings.Contains(text, tt.want) {
				t.Fatalf("got %d %s, want %d containing %q", code, body, tt.code, tt.want)
			}
		})
	}
	c.WaitIdle()
	if n := len(c.Agent.Runs()); n != 1 {
		t.Fatalf("agent got %d runs, want 1 (only the valid body)", n)
	}
}

func TestAuthToken(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{env: map[string]string{"AUTH_TOKEN": "s3cret"}})
	body := webhookBody(alert("fpA", "KubePodCrashLooping", "prod", "firing"))
	for _, p := range []string{"/health", "/ready", "/metrics"} {
		if code, b := call(t, http.MethodGet, c.URL+p, nil); code != 200 {
			t.Errorf("%s without token: %d %s", p, code, b)
		}
	}
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}} {
		code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", body, h...)
		if code != http.StatusUnauthorized || !bytes.Contains(b, []byte("bearer token")) {
			t.Errorf("webhook with %v: %d %s", h, code, b)
		}
		if code, _ := call(t, http.MethodGet, c.URL+"/api/v1/investigations", nil, h...); code != http.StatusUnauthorized {
			t.Errorf("dashboard with %v: %d", h, code)
		}
	}
	if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", body, "Authorization", "Bearer s3cret"); code != 200 {
		t.Fatalf("with token: %d %s", code, b)
	}
	c.WaitIdle()
	runs := c.Agent.Runs()
	if len(runs) != 1 || runs[0].Authorization != "Bearer s3cret" {
		t.Fatalf("agent runs %+v: want one, with the bearer token", runs)
	}
}

// TestOneBadAlertBlocksNothing: a group holding alerts with a blank, NUL,
// over-long or control-character fingerprint or label is answered 200;
// each bad alert gets its own rejected decision with the reason, every good
// one is decided and dispatched, on the memory store and on Postgres.
func TestOneBadAlertBlocksNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) store.CoreStore
	}{
		{"memory", func(*testing.T) store.CoreStore { return store.NewMemory(nil) }},
		{"postgres", func(t *testing.T) store.CoreStore { return openPG(t, pgSchema(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCore(t, coreOpts{store: tc.store(t)})
			// The two good alerts are two incidents (two namespaces).
			good := func(fp string) map[string]any { return alert(fp, "KubePodCrashLooping", "prod-"+fp, "firing") }
			bad := func(mut func(a map[string]any)) map[string]any {
				a := good("bad")
				mut(a)
				return a
			}
			labels := func(a map[string]any) map[string]string { return a["labels"].(map[string]string) }
			alerts := []map[string]any{
				good("good0001"),
				bad(func(a map[string]any) { a["fingerprint"] = "   " }),
				bad(func(a map[string]any) { a["fingerprint"] = "ab\x00cd" }),
				bad(func(a map[string]any) { a["fingerprint"] = strings.Repeat("f", 129) }),
				bad(func(a map[string]any) { labels(a)["pod"] = "api-\x01" }),
				bad(func(a map[string]any) { labels(a)["pod"] = strings.Repeat("p", 5000) }),
				bad(func(a map[string]any) { labels(a)["po\x00d"] = "x" }),
				good("good0002"),
			}
			code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alerts...))
			if code != 200 {
				t.Fatalf("webhook: %d %s", code, b)
			}
			ans := decode[struct {
				Decisions []struct{ Fingerprint, Decision, Reason string }
			}](t, b)
			want := []struct{ decision, reason string }{
				{"dispatched", "new alert"},
				{"rejected", "rejected alerts[1]: fingerprint is blank"},
				{"rejected", "rejected alerts[2]: fingerprint holds a control character"},
				{"rejected", "rejected alerts[3]: fingerprint is 129 bytes, the limit is 128"},
				{"rejected", "rejected alerts[4]: label pod holds a control character"},
				{"rejected", "rejected alerts[5]: label pod is 5000 bytes, the limit is 4096"},
				{"rejected", `rejected alerts[6]: label name "po\\x00d" holds a control character`},
				{"", ""}, // dispatched, or busy while the first runs
			}
			if len(ans.Decisions) != len(want) {
				t.Fatalf("decisions: %s", b)
			}
			for i, w := range want {
				d := ans.Decisions[i]
				if w.decision == "" && (d.Decision == "dispatched" || d.Decision == "busy") {
					continue
				}
				if d.Decision != w.decision || !strings.Contains(d.Reason, w.reason) || strings.ContainsRune(d.Fingerprint, 0) {
					t.Errorf("decision %d = %+v, want %s containing %q", i, d, w.decision, w.reason)
				}
			}
			if ans.Decisions[2].Fingerprint != `ab\x00cd` {
				t.Errorf("rejected fingerprint echoed as %q, want it escaped", ans.Decisions[2].Fingerprint)
			}
			c.WaitIdle()
			c.Upkeep(context.Background())
			c.WaitIdle()
			if n := len(c.Agent.Runs()); n != 2 {
				t.Errorf("agent got %d runs, want 2 (both good alerts)", n)
			}
			// The listing shows the rejections too, and nothing failed.
			_, lb, _ := do(t, http.MethodGet, c.URL+"/api/v1/alerts?limit=500", nil)
			if n := strings.Count(string(lb), `"decision":"rejected"`); n != 6 {
				t.Errorf("listed %d rejected decisions, want 6: %s", n, lb)
			}
			if got := metricValue(t, c.URL, `kubecrew_core_webhook_requests_total{code="500"}`); got != 0 {
				t.Errorf("%v webhook 500s", got)
			}
			if got := metricValue(t, c.URL, `kubecrew_core_alert_decisions_total{decision="rejected"}`); got != 6 {
				t.Errorf("rejected metric = %v, want 6", got)
			}
		})
	}
}

// TestBadIDsAndBodiesOnTheWire: control characters in an id or a query
// are a 400 on every core route (on Postgres too, which refuses NUL), and a
// body over its route's limit is a 413 on every route that takes one.
func TestBadIDsAndBodiesOnTheWire(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{store: openPG(t, pgSchema(t)), env: map[string]string{"ALERT_WEBHOOK_MAX_BYTES": "1Mi"}})
	for _, p := range []string{"/api/v1/investigations/a%00b", "/api/v1/investigations/%00/report", "/api/v1/investigations/a%01",
		"/api/v1/investigations/%C2%85", "/api/v1/alerts?cursor=%00", "/api/v1/audit?agent=x%00"} {
		code, b := call(t, http.MethodGet, c.URL+p, nil)
		if code != 400 || !strings.Contains(decode[struct{ Error string }](t, b).Error, "control character") {
			t.Errorf("GET %s = %d %s, want 400", p, code, b)
		}
	}
	if code, b := call(t, http.MethodGet, c.URL+"/api/v1/investigations/nope", nil); code != 404 {
		t.Errorf("unknown investigation = %d %s", code, b)
	}
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/alerts", `{"version":"4","pad":"` + strings.Repeat("x", 1<<20) + `"}`},
		{"/api/v1/agents/platform-sre/run", `{"task":"` + strings.Repeat("x", 300<<10) + `"}`},
	} {
		code, b := call(t, http.MethodPost, c.URL+tc.path, []byte(tc.body))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(decode[struct{ Error string }](t, b).Error, "larger than") {
			t.Errorf("POST %s oversize = %d %s, want 413", tc.path, code, b)
		}
	}
}

// TestAuthEveryRoute walks every route the core serves (a route added
// later is covered without editing this test) and calls each over HTTP
// with no token, wrong ones, the read-only token and AUTH_TOKEN with a
// lower-case scheme: only /health, /ready and /metrics answer without a
// token, the read-only token opens GETs (HTML reports included) and
// nothing else — the agent's guard is the same function (pkg/httpauth).
func TestAuthEveryRoute(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{env: map[string]string{"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"}})
	seen := authtest.CheckEveryRoute(t, authtest.Options{URL: c.URL, Routes: c.Handler().(chi.Routes),
		Params: [][2]string{{"{id}", "nope"}, {"{slug}", "platform-sre"}},
		// The dashboard's login form and its script and style are open; its
		// pages are not.
		Open: map[string]bool{"/health": true, "/ready": true, "/metrics": true, "/login": true, "/static/*": true},
		Full: "full-s3cret", Read: "read-s3cret"})
	for _, must := range []string{"GET /api/v1/agents", "GET /api/v1/alerts", "GET /api/v1/investigations", "GET /api/v1/investigations/nope",
		"GET /api/v1/investigations/nope/report", "GET /api/v1/findings", "GET /api/v1/audit", "GET /api/v1/openapi.yaml",
		"POST /api/v1/alerts", "POST /api/v1/agents/platform-sre/run", "GET /", "GET /alerts", "GET /investigations",
		"GET /investigations/nope", "GET /agents", "GET /agents/platform-sre", "GET /api/v1/alerts/counts",
		"GET /api/v1/investigations/nope/chain", "GET /api/v1/agents/platform-sre/runs", "GET /api/v1/events", "GET /api/v1/prs"} {
		if !seen[must] {
			t.Errorf("route %s not served (the walk must cover it)", must)
		}
	}
}

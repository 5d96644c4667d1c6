package app_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestWebhookRejectsBadBodies(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{})
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
		{"alert without fingerprint", strings.Replace(valid, `"fingerprint":"f1",`, ``, 1), 400, "alerts[0]: missing fingerprint"},
		{"alert without alertname", strings.Replace(valid, `"labels":{"alertname":"A"}`, `"labels":{"job":"x"}`, 1), 400, "alerts[0]: missing labels.alertname"},
		{"alert with unknown status", strings.Replace(valid, `"alerts":[{"status":"firing"`, `"alerts":[{"status":"active"`, 1), 400, `alerts[0]: unknown status "active"`},
		{"alert without status", strings.Replace(valid, `"alerts":[{"status":"firing",`, `"alerts":[{`, 1), 400, "alerts[0]: missing status"},
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

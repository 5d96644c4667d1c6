package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
)

// TestDashboardDataAPI: what the dashboard reads beyond the lists —
// decision counts of a window, an investigation's chain as data, an
// agent's runs — answers as openapi.yaml says, and bad input is a 400.
func TestDashboardDataAPI(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{})
	code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp1", "KubePodOOMKilled", "shop", "firing")))
	if code != 200 {
		t.Fatalf("webhook = %d %s", code, b)
	}
	c.WaitIdle()
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	code, b = call(t, http.MethodGet, c.URL+"/api/v1/alerts/counts?since="+since, nil)
	counts := decode[struct {
		Counts map[string]int
		Total  int
	}](t, b)
	if code != 200 || counts.Counts["dispatched"] != 1 || counts.Total != 1 {
		t.Errorf("counts = %d %s", code, b)
	}
	if code, b := call(t, http.MethodGet, c.URL+"/api/v1/alerts/counts?since=yesterday", nil); code != 400 || !strings.Contains(string(b), "RFC 3339") {
		t.Errorf("bad since = %d %s", code, b)
	}
	_, b = call(t, http.MethodGet, c.URL+"/api/v1/investigations", nil)
	invs := decode[struct{ Items []kapi.Investigation }](t, b)
	if len(invs.Items) != 1 {
		t.Fatalf("investigations: %s", b)
	}
	inv := invs.Items[0]
	c.Agent.SetRun(inv.RunID, kapi.RunView{RunResult: kapi.RunResult{RunID: inv.RunID, Agent: "platform-sre", WorkflowType: kapi.WorkflowAlert,
		Status: kapi.StatusCompleted, Findings: []kapi.Finding{}, StartedAt: time.Now().UTC()}, Task: "triage", Trace: []kapi.TraceEvent{}})
	code, b = call(t, http.MethodGet, c.URL+"/api/v1/investigations/"+inv.ID+"/chain", nil)
	if code != 200 || !strings.Contains(string(b), `"task":"triage"`) {
		t.Errorf("chain = %d %s", code, b)
	}
	if code, _ := call(t, http.MethodGet, c.URL+"/api/v1/investigations/nope/chain", nil); code != 404 {
		t.Errorf("unknown chain = %d", code)
	}
	code, b = call(t, http.MethodGet, c.URL+"/api/v1/agents/platform-sre/runs?workflow_type=alert&limit=5", nil)
	if code != 200 || !strings.Contains(string(b), inv.RunID) {
		t.Errorf("agent runs = %d %s", code, b)
	}
	for _, p := range []string{"/api/v1/agents/nobody/runs", "/api/v1/agents/platform-sre/runs?limit=0"} {
		if code, b := call(t, http.MethodGet, c.URL+p, nil); code != 404 && code != 400 {
			t.Errorf("GET %s = %d %s", p, code, b)
		}
	}
}

// TestFiringAlertsAPI: GET /api/v1/alerts?state=firing lists each alert
// firing once, with its newest decision, in pages that all carry the
// total; a resolved alert is not listed; a state it does not know is a 400.
func TestFiringAlertsAPI(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{})
	post := func(as ...map[string]any) {
		t.Helper()
		if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(as...)); code != 200 {
			t.Fatalf("webhook = %d %s", code, b)
		}
		c.WaitIdle()
	}
	post(alert("fp1", "KubePodOOMKilled", "shop", "firing"), alert("fp2", "KubePodCrashLooping", "shop", "firing"),
		alert("fp3", "KubePodCrashLooping", "web", "firing"))
	post(alert("fp2", "KubePodCrashLooping", "shop", "resolved"))
	post(alert("fp1", "KubePodOOMKilled", "shop", "firing")) // a repeat: fp1's line is its newest decision
	var got []string
	cursor := ""
	for range 5 {
		url := c.URL + "/api/v1/alerts?state=firing&limit=1"
		if cursor != "" {
			url += "&cursor=" + cursor
		}
		code, b := call(t, http.MethodGet, url, nil)
		p := decode[struct {
			Items []struct {
				Fingerprint, Decision, Reason string
			}
			NextCursor string `json:"next_cursor"`
			Total      int
		}](t, b)
		if code != 200 || p.Total != 2 {
			t.Fatalf("firing = %d %s", code, b)
		}
		for _, it := range p.Items {
			got = append(got, it.Fingerprint)
			if it.Reason == "" {
				t.Errorf("%s: no reason", it.Fingerprint)
			}
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(got, ",") != "fp1,fp3" {
		t.Errorf("firing alerts = %v, want fp1 (repeated last), fp3", got)
	}
	if code, b := call(t, http.MethodGet, c.URL+"/api/v1/alerts?state=pending", nil); code != 400 || !strings.Contains(string(b), "firing") {
		t.Errorf("unknown state = %d %s", code, b)
	}
}

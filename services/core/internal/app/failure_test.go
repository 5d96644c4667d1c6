package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
)

type invItem struct {
	ID, Fingerprint, Status, Error, Agent string
	RunID                                 string `json:"run_id"`
}

func investigations(t *testing.T, c *testCore) []invItem {
	t.Helper()
	_, b, _ := do(t, http.MethodGet, c.URL+"/api/v1/investigations?limit=500", nil)
	return decode[struct{ Items []invItem }](t, b).Items
}

// TestAgentFailuresAreRecordedAndRetried: an agent that errors, answers
// garbage, is down, or outlives AGENT_CALL_TIMEOUT makes a failed
// investigation — recorded, the slot freed — and the alert is investigated
// again once its backoff allows, never lost and never a crash.
func TestAgentFailuresAreRecordedAndRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(c *testCore)
		want  string // in the investigation's error
	}{
		{"agent answers 500", func(c *testCore) {
			c.Agent.Reply(func(kapi.RunRequest) (int, any) { return 500, kapi.ErrorBody{Error: "model gateway 502"} })
		}, "agent answered 500: model gateway 502"},
		{"agent answers a run status it should not", func(c *testCore) {
			c.Agent.Reply(func(kapi.RunRequest) (int, any) { return 200, map[string]any{"run_id": "r1", "status": "exploded"} })
		}, `agent answered run status "exploded"`},
		{"agent answers non-JSON", func(c *testCore) {
			c.Agent.Reply(func(kapi.RunRequest) (int, any) { return 200, "<html>502 Bad Gateway</html>" })
		}, "malformed run result"},
		{"agent is down", func(c *testCore) { c.Agent.Server.Close() }, "connect"},
		{"agent outlives AGENT_CALL_TIMEOUT", func(c *testCore) { _ = c.Agent.Gate() }, "AGENT_CALL_TIMEOUT (1s) elapsed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCore(t, coreOpts{clock: clk, env: map[string]string{"AGENT_CALL_TIMEOUT": "1s"}})
			tt.setup(c)
			body := webhookBody(alert("fp1", "KubePodCrashLooping", "prod", "firing"))
			code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", body)
			if code != 200 || !strings.Contains(string(b), `"decision":"dispatched"`) {
				t.Fatalf("webhook: %d %s", code, b)
			}
			c.WaitIdle()
			invs := investigations(t, c)
			if len(invs) != 1 || invs[0].Status != "failed" || !strings.Contains(invs[0].Error, tt.want) {
				t.Fatalf("investigations %+v, want one failed with %q", invs, tt.want)
			}
			// The slot is free: a second alert is dispatched, not busy.
			code, b = call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp2", "KubePodOOMKilled", "prod", "firing")))
			if code != 200 || !strings.Contains(string(b), `"decision":"dispatched"`) {
				t.Fatalf("second alert: %d %s", code, b)
			}
			c.WaitIdle()
			// Within the cooldown the failed alert waits; after it, it is
			// investigated again.
			clk.Advance(10 * time.Minute)
			if _, b = call(t, http.MethodPost, c.URL+"/api/v1/alerts", body); !strings.Contains(string(b), `"decision":"cooldown"`) {
				t.Fatalf("within cooldown: %s", b)
			}
			clk.Advance(25 * time.Minute)
			if _, b = call(t, http.MethodPost, c.URL+"/api/v1/alerts", body); !strings.Contains(string(b), `"decision":"dispatched"`) {
				t.Fatalf("after cooldown: %s", b)
			}
			c.WaitIdle()
			if n := len(investigations(t, c)); n != 3 {
				t.Fatalf("%d investigations, want 3", n)
			}
		})
	}
}

// TestLostInvestigationIsReclaimed: an investigation whose core died
// mid-call would hold its agent's slot for ever; upkeep marks it failed
// after AGENT_CALL_TIMEOUT + 1m, and the queued alert behind it runs.
func TestLostInvestigationIsReclaimed(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCore(t, coreOpts{clock: clk, env: map[string]string{"AGENT_CALL_TIMEOUT": "5m"}})
	// The agent never answers fp1 while the clock runs past the stale
	// limit: to the store this is exactly a dispatch whose core died.
	gate := c.Agent.Gate()
	_, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp1", "A", "prod", "firing"), alert("fp2", "B", "staging", "firing")))
	if !strings.Contains(string(b), `"decision":"busy"`) {
		t.Fatalf("%s", b)
	}
	// fp1 is running (the agent holds it at the gate). Before the stale
	// limit, upkeep leaves it alone.
	clk.Advance(5 * time.Minute)
	c.Upkeep(context.Background())
	if invs := investigations(t, c); len(invs) != 1 || invs[0].Status != "running" {
		t.Fatalf("before the stale limit: %+v", invs)
	}
	clk.Advance(2 * time.Minute)
	c.Upkeep(context.Background())
	invs := investigations(t, c)
	if len(invs) != 2 {
		t.Fatalf("after reclaim: %+v, want the lost one failed and the queued one dispatched", invs)
	}
	var lost, next invItem
	for _, i := range invs {
		if i.Fingerprint == incidentKey("{}:{}", alert("fp1", "A", "prod", "firing")) {
			lost = i
		} else {
			next = i
		}
	}
	if lost.Status != "failed" || !strings.Contains(lost.Error, "presumed lost") || next.Fingerprint != incidentKey("{}:{}", alert("fp2", "B", "staging", "firing")) {
		t.Fatalf("lost %+v next %+v", lost, next)
	}
	close(gate)
	c.WaitIdle()
}

package a2aserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// runStart is the run_start event of a node's run.
func runStart(t *testing.T, n *node, runID string) map[string]any {
	t.Helper()
	evs, err := n.store.Events(context.Background(), runID)
	if err != nil || len(evs) == 0 || evs[0].Type != "run_start" {
		t.Fatalf("trace of %s: %v %v", runID, evs, err)
	}
	var m map[string]any
	if err := json.Unmarshal(evs[0].Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The calling run's time left travels as kubecrew/budget_ms: the callee's
// run gets a budget shorter than the caller's, from the caller.
func TestBudgetTravelsInTheA2AMetadata(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{
		"noor": engine.PlaybookFunc(relay),
		"sol":  engine.PlaybookFunc(relay),
	})
	noor, sol := nodes["platform-sre"], nodes["k8s-engineer"]
	run, err := noor.eng.Start(context.Background(), api.RunRequest{Task: "relay: sol", BudgetMS: 20000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(context.Background())
	if err != nil || res.Status != api.StatusCompleted {
		t.Fatalf("noor's run = %+v, %v", res, err)
	}
	recv := findEntry(sol.settled(t), a2a.DirectionReceived)
	if len(recv) != 1 {
		t.Fatalf("sol received %+v", recv)
	}
	caller, callee := runStart(t, noor, run.ID), runStart(t, sol, recv[0].CalleeRunID)
	cb, _ := caller["budget_ms"].(float64)
	sb, _ := callee["budget_ms"].(float64)
	if cb != 18000 || sb <= 0 || sb >= cb || !strings.Contains(callee["budget_source"].(string), "the caller's budget_ms") {
		t.Errorf("noor's run budget %v ms, sol's %v ms from %q; want sol's shorter, from the caller", cb, sb, callee["budget_source"])
	}
}

// A caller that stops waiting for a blocking message/send ends the run it
// waited for: the run is canceled, says why, and the audit log records it.
func TestCallerThatStopsWaitingCancelsTheRun(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{"vera": engine.PlaybookFunc(waitForCancel)})
	vera := nodes["code-reviewer"]
	client, _ := sdkClient(t, vera, "", a2aclient.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := client.SendMessage(ctx, userMessage("review PR 7")); err == nil {
		t.Fatal("the blocking send answered; the run should still be working")
	}
	// Wait returns once the run ended and its outcome is recorded; without
	// the cancel it would run until RUN_TIMEOUT (30s) and end failed.
	es := findEntry(vera.settled(t), a2a.DirectionReceived)
	if len(es) != 1 || es[0].Outcome != a2a.OutcomeCanceled || !strings.Contains(es[0].Error, "the A2A caller stopped waiting") {
		t.Fatalf("audit = %+v; want the run canceled because the caller stopped waiting", es)
	}
	rec, err := vera.store.GetRun(context.Background(), es[0].CalleeRunID)
	if err != nil || rec.Status != api.StatusFailed || !strings.Contains(rec.Error, "run canceled by request") {
		t.Fatalf("vera's run = %+v, %v", rec, err)
	}
	if got, err := client.GetTask(context.Background(), &sdk.TaskQueryParams{ID: sdk.TaskID(rec.ID)}); err != nil || got.Status.State != sdk.TaskStateCanceled {
		t.Errorf("tasks/get = %+v, %v; want canceled", got, err)
	}
}

// An agent at capacity answers A2A with a busy error; the caller treats it
// as busy, not failed: the tool tells the model it is not a failure, the
// delegation is recorded busy, and both audit logs say busy.
func TestBusyPeerIsBusyNotFailed(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{maxConcurrent: 1}, map[string]engine.Playbook{
		"noor": engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
			if err := relay(ctx, r); err != nil {
				return err
			}
			r.Delegate(ctx, "vera", oomFinding(), "review the memory bump")
			return nil
		}),
		"vera": engine.PlaybookFunc(waitForCancel),
	})
	noor, vera := nodes["platform-sre"], nodes["code-reviewer"]
	// Vera's one slot is taken by a message nobody waits for.
	client, _ := sdkClient(t, vera, "", a2aclient.Config{Polling: true})
	sent, err := client.SendMessage(context.Background(), userMessage("review PR 9 when you can"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := noor.eng.Start(context.Background(), api.RunRequest{Task: "relay: vera"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Delegation == nil || !res.Delegation.Busy || res.Delegation.Sent || res.Delegation.Outcome() != api.VerdictDelegationBusy ||
		!strings.Contains(res.Delegation.Error, "code-reviewer has 1 runs in flight (AGENT_MAX_CONCURRENT_RUNS=1)") {
		t.Errorf("delegation = %+v; want busy, not sent", res.Delegation)
	}
	if res.Verdict == api.VerdictDelegationFailed {
		t.Errorf("verdict = %s; a busy delegate is not a failed delegation", res.Verdict)
	}
	calls := eventsOfRun(t, noor, run.ID, "tool_result")
	if len(calls) != 1 || !strings.Contains(calls[0]["output"].(string), "is busy") ||
		!strings.Contains(calls[0]["output"].(string), "not a failure") || calls[0]["outcome"] != "ok" {
		t.Errorf("ask_agent answered %v; want busy, not an error", calls)
	}
	for _, e := range append(findEntry(noor.audit(t), a2a.DirectionSent), findEntry(vera.audit(t), a2a.DirectionReceived)...) {
		if e.Text == "review PR 9 when you can" {
			continue
		}
		if e.Outcome != a2a.OutcomeBusy || !strings.Contains(e.Error, "retry after") {
			t.Errorf("%s entry %s: outcome %s error %q; want busy", e.Direction, e.Verb, e.Outcome, e.Error)
		}
	}
	if _, err := client.CancelTask(context.Background(), &sdk.TaskIDParams{ID: sent.(*sdk.Task).ID}); err != nil {
		t.Fatal(err)
	}
}

// eventsOfRun returns the data of a node's run's events of one type.
func eventsOfRun(t *testing.T, n *node, runID, typ string) []map[string]any {
	t.Helper()
	evs, err := n.store.Events(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Type == typ {
			var m map[string]any
			_ = json.Unmarshal(e.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

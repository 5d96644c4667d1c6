package a2aserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

func traceOf(t *testing.T, n *node, runID, typ string) []map[string]any {
	t.Helper()
	evs, err := n.store.Events(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == typ {
			var m map[string]any
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

func TestDepthChainStopsAtFive(t *testing.T) {
	t.Parallel()
	relayPB := engine.PlaybookFunc(relay)
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{
		"noor": relayPB, "sol": relayPB, "vera": relayPB, "dax": relayPB, "ada": relayPB,
	})
	noor := nodes["platform-sre"]
	client, _ := sdkClient(t, noor, "", a2aclient.Config{})
	// A person asks Noor (depth 0) to start the chain; Ada (depth 4) would
	// reach depth 5 by asking anyone.
	first := userMessage("relay: sol vera dax ada noor")
	first.Message.Metadata = map[string]any{a2a.KeyTraceID: "trace-from-outside"}
	res, err := client.SendMessage(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*sdk.Task)
	answer, _ := artifactText(t, task)
	for _, want := range []string{
		"platform-sre asked sol", "k8s-engineer asked vera", "code-reviewer asked dax", "cicd-engineer asked ada",
		"backend-architect asked noor: ERROR: refused: this message would be at social depth 5 and MAX_SOCIAL_DEPTH is 5",
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer lacks %q:\n%s", want, answer)
		}
	}

	// Each hop ran at its depth, on one discussion, in one trace.
	chain := []string{"platform-sre", "k8s-engineer", "code-reviewer", "cicd-engineer", "backend-architect"}
	var discussion string
	for depth, slug := range chain {
		rec := findEntry(nodes[slug].settled(t), a2a.DirectionReceived)
		if len(rec) != 1 {
			t.Fatalf("%s received %d messages, want 1: %+v", slug, len(rec), rec)
		}
		e := rec[0]
		if e.Depth != depth || e.Outcome != a2a.OutcomeCompleted {
			t.Errorf("%s received at depth %d outcome %s, want depth %d completed", slug, e.Depth, e.Outcome, depth)
		}
		if depth == 0 {
			discussion = e.DiscussionID
		} else if e.DiscussionID != discussion || e.Caller != chain[depth-1] {
			t.Errorf("%s: discussion %s caller %s, want %s %s", slug, e.DiscussionID, e.Caller, discussion, chain[depth-1])
		}
		if e.TraceID != "trace-from-outside" {
			t.Errorf("%s: trace %q, want the one the chain started with", slug, e.TraceID)
		}
		run, err := nodes[slug].store.GetRun(context.Background(), e.CalleeRunID)
		if err != nil || run.SocialDepth != depth || run.WorkflowType != api.WorkflowA2AAsk {
			t.Errorf("%s run = %+v %v", slug, run, err)
		}
	}
	// The refusal is recorded on Ada's side, and nothing reached Noor again.
	sent := findEntry(nodes["backend-architect"].audit(t), a2a.DirectionSent)
	if len(sent) != 1 || sent[0].Outcome != a2a.OutcomeRefused || sent[0].Depth != 5 || sent[0].Callee != "platform-sre" ||
		!strings.Contains(sent[0].Error, "MAX_SOCIAL_DEPTH is 5") || sent[0].Text != "relay:" || sent[0].TraceID != "trace-from-outside" {
		t.Errorf("ada's sent entry = %+v", sent)
	}
	if n := len(findEntry(noor.audit(t), a2a.DirectionReceived)); n != 1 {
		t.Errorf("noor received %d messages, want 1", n)
	}
	// And in Ada's run trace.
	ev := traceOf(t, nodes["backend-architect"], findEntry(nodes["backend-architect"].audit(t), a2a.DirectionReceived)[0].CalleeRunID, "a2a_send")
	if len(ev) != 1 || ev[0]["outcome"] != a2a.OutcomeRefused || ev[0]["depth"] != float64(5) {
		t.Errorf("ada's a2a_send trace = %v", ev)
	}
}

func TestCycleIsRefused(t *testing.T) {
	t.Parallel()
	relayPB := engine.PlaybookFunc(relay)
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{"noor": relayPB, "sol": relayPB})
	noor, sol := nodes["platform-sre"], nodes["k8s-engineer"]

	tests := []struct {
		name  string
		start func(t *testing.T) string // returns Noor's answer
	}{
		{name: "over A2A (discussion from the first message)", start: func(t *testing.T) string {
			client, _ := sdkClient(t, noor, "", a2aclient.Config{})
			res, err := client.SendMessage(context.Background(), userMessage("relay: sol noor"))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := artifactText(t, res.(*sdk.Task))
			return a
		}},
		{name: "from a run with no discussion (the run id names it)", start: func(t *testing.T) string {
			r, err := noor.eng.Start(context.Background(), api.RunRequest{Task: "relay: sol noor"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return res.Answer
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := tt.start(t)
			t.Log(answer)
			if !strings.Contains(answer, "k8s-engineer asked noor: ERROR: platform-sre refused the message: platform-sre is already working on discussion") ||
				!strings.Contains(answer, "(cycle)") {
				t.Fatalf("answer = %s", answer)
			}
		})
	}
	// Both refusals are on record on both sides.
	var cycles int
	for _, e := range findEntry(noor.settled(t), a2a.DirectionReceived) {
		if e.Outcome == a2a.OutcomeRefused {
			cycles++
			if e.Caller != "k8s-engineer" || !strings.Contains(e.Error, "(cycle)") || e.Text != "relay:" {
				t.Errorf("noor's refused entry = %+v", e)
			}
		}
	}
	var solRefused int
	for _, e := range findEntry(sol.settled(t), a2a.DirectionSent) {
		if e.Outcome == a2a.OutcomeRefused && strings.Contains(e.Error, "cycle") {
			solRefused++
		}
	}
	if cycles != 2 || solRefused != 2 {
		t.Errorf("cycle refusals: noor recorded %d, sol recorded %d; want 2 and 2", cycles, solRefused)
	}
}

func TestCallerWithoutDepthCountsAsMaxDepth(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{"sol": engine.PlaybookFunc(echo)})
	sol := nodes["k8s-engineer"]
	client, _ := sdkClient(t, sol, "", a2aclient.Config{})

	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "restart agent-platform-sre, it is not listening on :8000"})
	msg.Metadata = map[string]any{a2a.KeyCaller: "platform-sre", a2a.KeyVerb: "delegate"}
	_, err := client.SendMessage(context.Background(), &sdk.MessageSendParams{Message: msg})
	if err == nil || !strings.Contains(err.Error(), `the message from "platform-sre" carries no kubecrew/social_depth, so it counts as depth 5`) {
		t.Fatalf("error = %v", err)
	}
	es := findEntry(sol.settled(t), a2a.DirectionReceived)
	if len(es) != 1 {
		t.Fatalf("audit = %+v", es)
	}
	e := es[0]
	if e.Outcome != a2a.OutcomeRefused || e.Depth != 5 || e.Caller != "platform-sre" || e.Verb != "delegate" ||
		e.Text != "restart agent-platform-sre, it is not listening on :8000" || e.CalleeRunID != "" {
		t.Errorf("entry = %+v", e)
	}
	runs, _, err := sol.store.ListRuns(context.Background(), store.RunFilter{}, store.Page{})
	if err != nil || len(runs) != 0 {
		t.Errorf("a refused message started runs: %+v %v", runs, err)
	}
}

package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

const instruction = "Remediate kubecrew-fixtures/oomkill: container app is OOMKilled at its 64Mi limit. Open the memory-bump PR (1.5x). Do not re-judge it."

// actOnFinding is a stand-in for Sol's playbook: it acts on the delegated
// finding without re-judging it and says what it was told.
func actOnFinding(_ context.Context, r *engine.Run) error {
	if r.Req.WorkflowType != api.WorkflowA2ADelegate {
		return fmt.Errorf("workflow %s, want a2a-delegate", r.Req.WorkflowType)
	}
	var f api.Finding
	if err := json.Unmarshal([]byte(r.Req.Context["finding"]), &f); err != nil {
		return fmt.Errorf("context.finding: %w", err)
	}
	r.ReportFinding(f)
	r.SetAnswer(fmt.Sprintf("opened PR agent/fix/%s (mode %s, told by %s at depth %d)", f.Key, r.Mode, r.Req.Caller, r.Req.SocialDepth))
	return nil
}

func TestRunDelegateCarriesTheFindingAndIsAudited(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{token: "fleet-token"}, map[string]engine.Playbook{
		"noor": engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
			d := r.Delegate(ctx, "sol", oomFinding(), instruction)
			r.SetAnswer(fmt.Sprintf("sent=%v to=%s run=%s result=%s error=%s", d.Sent, d.To, d.RunID, d.Result, d.Error))
			return nil
		}),
		"sol": engine.PlaybookFunc(actOnFinding),
	})
	noor, sol := nodes["platform-sre"], nodes["k8s-engineer"]
	ctx := context.Background()
	run, err := noor.eng.Start(ctx, api.RunRequest{Task: "sweep the cluster", WorkflowType: api.WorkflowPulseTask})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Delegation
	key := oomFinding().Key
	if d == nil || !d.Sent || d.To != "k8s-engineer" || d.RunID == "" || d.Error != "" || d.Finding.Key != key ||
		!strings.Contains(d.Result, "opened PR agent/fix/"+key+" (mode autonomous, told by platform-sre at depth 1)") {
		t.Fatalf("delegation = %+v (answer %s)", d, res.Answer)
	}

	// Sol's run: a delegated, autonomous run at depth 1 in Noor's discussion.
	solRun, err := sol.store.GetRun(ctx, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if solRun.WorkflowType != api.WorkflowA2ADelegate || solRun.Caller != "platform-sre" || solRun.SocialDepth != 1 ||
		solRun.DiscussionID != run.ID || solRun.Task != instruction || !strings.Contains(solRun.Context["finding"], `"container":"app"`) {
		t.Errorf("sol's run = %+v", solRun)
	}

	// Both logs hold the full instruction, the finding and both run ids.
	sent := findEntry(noor.settled(t), a2a.DirectionSent)
	recv := findEntry(sol.settled(t), a2a.DirectionReceived)
	if len(sent) != 1 || len(recv) != 1 {
		t.Fatalf("sent %+v received %+v", sent, recv)
	}
	for _, e := range append(sent, recv...) {
		if e.Text != instruction || e.Verb != "delegate" || e.Caller != "platform-sre" || e.Callee != "k8s-engineer" ||
			e.Depth != 1 || e.CallerRunID != run.ID || e.CalleeRunID != d.RunID || e.Outcome != a2a.OutcomeCompleted ||
			e.DiscussionID != run.ID || !strings.Contains(e.Answer, "opened PR") || e.FinishedAt == nil {
			t.Errorf("%s entry = %+v", e.Direction, e)
		}
		var data struct {
			Finding api.Finding `json:"finding"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil || data.Finding.Key != key || data.Finding.Reason != "OOMKilled" {
			t.Errorf("%s entry data = %s (%v)", e.Direction, e.Data, err)
		}
	}
	if strings.TrimSuffix(sent[0].ID, ":sent") != strings.TrimSuffix(recv[0].ID, ":received") {
		t.Errorf("entries do not share the message id: %s %s", sent[0].ID, recv[0].ID)
	}

	// "Who told you to do that, and what exactly did they say?" — asked of
	// Sol's log over HTTP, with the fleet's token like every read.
	req, _ := http.NewRequest(http.MethodGet, sol.url+"/a2a/log?limit=10", nil)
	req.Header.Set("Authorization", "Bearer fleet-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page a2a.AuditPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Caller != "platform-sre" || page.Items[0].Text != instruction ||
		page.Items[0].CalleeRunID != d.RunID || page.Items[0].CallerRunID != run.ID || page.NextCursor != "" {
		t.Errorf("GET /a2a/log = %+v", page)
	}

	// The traces: a2a_send in Noor's run, a2a_received in Sol's.
	if ev := traceOf(t, noor, run.ID, "a2a_send"); len(ev) != 1 || ev[0]["text"] != instruction || ev[0]["callee_run_id"] != d.RunID || ev[0]["finding"] == nil {
		t.Errorf("noor's a2a_send = %v", ev)
	}
	if ev := traceOf(t, sol, d.RunID, "a2a_received"); len(ev) != 1 || ev[0]["caller"] != "platform-sre" || ev[0]["caller_run_id"] != run.ID {
		t.Errorf("sol's a2a_received = %v", ev)
	}
}

func TestDelegateTaskTool(t *testing.T) {
	t.Parallel()
	type call struct {
		args    map[string]any
		wantOut []string
		wantOK  bool
	}
	finding := map[string]any{"severity": "critical", "kind": "Deployment", "namespace": "kubecrew-fixtures", "name": "oomkill",
		"container": "app", "reason": "OOMKilled", "detail": "4 OOMKills in 10m", "remediable": true}
	calls := []call{
		{args: map[string]any{"agent_slug": "sol", "decision": "Raise the memory limit of oomkill/app by 1.5x.", "finding": finding, "evidence": "lastState.terminated.reason=OOMKilled x4"},
			wantOK: true, wantOut: []string{"k8s-engineer did the delegated work (task ", "completed", "opened PR agent/fix/kubecrew-fixtures-deployment-oomkill-app-oomkilled", "1 finding(s):"}},
		{args: map[string]any{"agent_slug": "bob", "decision": "x"}, wantOut: []string{`ERROR: unknown agent "bob"; valid agent_slug values: platform-sre (noor), k8s-engineer (sol)`}},
		{args: map[string]any{"agent_slug": "sol"}, wantOut: []string{"ERROR: decision is required"}},
		{args: map[string]any{"agent_slug": "sol", "decision": "x", "finding": map[string]any{"severity": "high", "kind": "Deployment"}}, wantOut: []string{"ERROR: finding lacks namespace, name, reason"}},
		{args: map[string]any{"agent_slug": "sol", "decision": "x", "url": "http://evil/invoke"}, wantOut: []string{"ERROR: invalid arguments: unknown field"}},
	}
	outs := make(chan []string, 1)
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{
		"noor": engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
			var got []string
			for i, c := range calls {
				raw, _ := json.Marshal(c.args)
				out, outcome := r.CallTool(ctx, fmt.Sprint("c", i), "delegate_task", json.RawMessage(raw))
				got = append(got, outcome+"|"+out)
			}
			outs <- got
			return nil
		}),
		"sol": engine.PlaybookFunc(actOnFinding),
	})
	noor, sol := nodes["platform-sre"], nodes["k8s-engineer"]
	run, err := noor.eng.Start(context.Background(), api.RunRequest{Task: "delegate", WorkflowType: api.WorkflowAlert})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := <-outs
	for i, c := range calls {
		outcome, out, _ := strings.Cut(got[i], "|")
		if (outcome == tools.OutcomeOK) != c.wantOK {
			t.Errorf("call %d outcome %s: %s", i, outcome, out)
		}
		for _, w := range c.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("call %d output lacks %q:\n%s", i, w, out)
			}
		}
	}
	// The run's delegation record (what backstops look at) is the hand-off
	// that reached Sol, which got the decision and the evidence as text and
	// the finding as data.
	if d := res.Delegation; d == nil || !d.Sent || d.To != "k8s-engineer" || d.Finding.Name != "oomkill" || d.RunID == "" {
		t.Errorf("delegation record = %+v; want the hand-off that reached Sol, not the later failed attempts", d)
	}
	recv := findEntry(sol.settled(t), a2a.DirectionReceived)
	if len(recv) != 1 {
		t.Fatalf("sol received %+v", recv)
	}
	want := "Raise the memory limit of oomkill/app by 1.5x.\n\nEvidence:\nlastState.terminated.reason=OOMKilled x4"
	if recv[0].Text != want || !strings.Contains(string(recv[0].Data), `"key":"kubecrew-fixtures-deployment-oomkill-app-oomkilled"`) {
		t.Errorf("sol got %q %s", recv[0].Text, recv[0].Data)
	}
	if n := len(findEntry(noor.audit(t), a2a.DirectionSent)); n != 1 {
		t.Errorf("noor recorded %d sent messages; bad input must not be sent or recorded", n)
	}
}

func TestAskAndNotifyTools(t *testing.T) {
	t.Parallel()
	outs := make(chan [2]string, 1)
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{
		"noor": engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
			ask, _ := r.CallTool(ctx, "a", "ask_agent", json.RawMessage(`{"agent_slug":"Sol","question":"is the oomkill PR open?"}`))
			notify, _ := r.CallTool(ctx, "n", "notify_agent", json.RawMessage(`{"agent_slug":"code-reviewer","message":"PR agent/fix/x is ready for review"}`))
			outs <- [2]string{ask, notify}
			return nil
		}),
		"sol":  engine.PlaybookFunc(echo),
		"vera": engine.PlaybookFunc(echo),
	})
	noor, sol, vera := nodes["platform-sre"], nodes["k8s-engineer"], nodes["code-reviewer"]
	run, err := noor.eng.Start(context.Background(), api.RunRequest{Task: "check"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := <-outs
	if !strings.Contains(got[0], "k8s-engineer answered (task ") || !strings.Contains(got[0], "echo: is the oomkill PR open?") {
		t.Errorf("ask_agent = %s", got[0])
	}
	if !strings.Contains(got[1], "code-reviewer accepted the message (task ") || !strings.Contains(got[1], "will not answer you") {
		t.Errorf("notify_agent = %s", got[1])
	}
	if e := findEntry(sol.settled(t), a2a.DirectionReceived); len(e) != 1 || e[0].Verb != "ask" || e[0].Text != "is the oomkill PR open?" {
		t.Errorf("sol's log = %+v", e)
	}
	if e := findEntry(vera.settled(t), a2a.DirectionReceived); len(e) != 1 || e[0].Verb != "notify" || e[0].Outcome != a2a.OutcomeCompleted {
		t.Errorf("vera's log = %+v", e)
	}
	sent := findEntry(noor.audit(t), a2a.DirectionSent)
	outcomes := map[string]string{}
	for _, e := range sent {
		outcomes[e.Verb] = e.Outcome
	}
	if outcomes["ask"] != a2a.OutcomeCompleted || outcomes["notify"] != a2a.OutcomeAccepted {
		t.Errorf("noor's sent outcomes = %v", outcomes)
	}
	if ev := traceOf(t, noor, run.ID, "a2a_send"); len(ev) != 2 {
		t.Errorf("noor's a2a_send events = %v", ev)
	}
}

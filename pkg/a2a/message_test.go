package a2a

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func oomFinding() api.Finding {
	return api.Finding{Severity: "critical", Kind: "Deployment", Namespace: "kubecrew-fixtures", Name: "oomkill",
		Container: "app", Reason: "OOMKilled", Detail: "container app was OOMKilled 4 times in 10m", Remediable: true, Confidence: 0.9}
}

// wire sends m through JSON the way the SDK does, and back.
func wire(t *testing.T, m *sdk.Message) *sdk.Message {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out sdk.Message
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return &out
}

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	f := oomFinding()
	msg := NewMessage("Raise the memory limit of kubecrew-fixtures/oomkill container app by 1.5x.", &f,
		Meta{Verb: VerbDelegate, Depth: 1, HasDepth: true, Caller: "platform-sre", DiscussionID: "disc-1"})
	raw, _ := json.Marshal(msg)
	for _, want := range []string{`"kind":"message"`, `"kind":"text"`, `"kind":"data"`, `"kubecrew/verb":"delegate"`, `"contextId":"disc-1"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("wire form lacks %s: %s", want, raw)
		}
	}
	in, err := ParseMessage(wire(t, msg))
	if err != nil {
		t.Fatal(err)
	}
	if in.Text != "Raise the memory limit of kubecrew-fixtures/oomkill container app by 1.5x." {
		t.Errorf("text = %q", in.Text)
	}
	if in.Finding == nil || in.Finding.Key != "kubecrew-fixtures-deployment-oomkill-app-oomkilled" || in.Finding.Container != "app" {
		t.Errorf("finding = %+v", in.Finding)
	}
}

// The diagnosis's config-change evidence travels as structured data, so
// Sol's plan reads it from the finding, not from the text.
func TestMessageCarriesConfigChange(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	f := api.Finding{Severity: "high", Kind: "Deployment", Namespace: "shop", Name: "api", Container: "app", Reason: "CrashLoopBackOff",
		ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "api-config\u0007", ChangedAt: started.Add(3 * time.Minute), PodsStartedAt: started}}
	in, err := ParseMessage(wire(t, NewMessage("Fix api.", &f, Meta{Verb: VerbDelegate, Depth: 1, HasDepth: true})))
	if err != nil {
		t.Fatal(err)
	}
	cc := in.Finding.ConfigChange
	if cc == nil || cc.Name != "api-config" || !cc.After() || !cc.PodsStartedAt.Equal(started) {
		t.Fatalf("config_change = %+v, want api-config written after %s (control character removed)", cc, started)
	}
}

func TestParseMessageRejects(t *testing.T) {
	t.Parallel()
	text := func(s string) sdk.Part { return sdk.TextPart{Text: s} }
	data := func(d map[string]any) sdk.Part { return sdk.DataPart{Data: d} }
	f := findingMap(oomFinding())
	tests := []struct {
		name    string
		parts   []sdk.Part
		wantErr string
	}{
		{name: "no parts", wantErr: "message has no parts"},
		{name: "blank text", parts: []sdk.Part{text("  \n ")}, wantErr: "message has no text"},
		{name: "file part", parts: []sdk.Part{text("hi"), sdk.FilePart{File: sdk.FileURI{URI: "http://x"}}}, wantErr: "part 1: a2a.FilePart is not supported"},
		{name: "too long", parts: []sdk.Part{text(strings.Repeat("x", MaxTextChars+1))}, wantErr: "the limit is 20000"},
		{name: "finding not an object", parts: []sdk.Part{data(map[string]any{"finding": "restart it"})}, wantErr: "not a Finding object"},
		{name: "finding with unknown field", parts: []sdk.Part{data(map[string]any{"finding": map[string]any{"kind": "Deployment", "urgent": true}})}, wantErr: "unknown field"},
		{name: "finding missing fields", parts: []sdk.Part{data(map[string]any{"finding": map[string]any{"kind": "Deployment", "severity": "high"}})}, wantErr: "finding lacks namespace, name, reason"},
		{name: "finding bad severity", parts: []sdk.Part{data(map[string]any{"finding": withKey(f, "severity", "urgent")})}, wantErr: `severity "urgent"`},
		{name: "two findings", parts: []sdk.Part{data(map[string]any{"finding": f}), data(map[string]any{"finding": f})}, wantErr: "more than one finding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseMessage(&sdk.Message{ID: "m", Role: sdk.MessageRoleUser, Parts: tt.parts})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseMessage error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func withKey(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func TestParseMessageCleansAndKeepsData(t *testing.T) {
	t.Parallel()
	in, err := ParseMessage(&sdk.Message{Parts: sdk.ContentParts{
		sdk.TextPart{Text: "restart \u202eweb\x00"}, sdk.TextPart{Text: "now"},
		sdk.DataPart{Data: map[string]any{"ticket": "OPS-1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Text != "restart web\n\nnow" {
		t.Errorf("text = %q", in.Text)
	}
	if in.Data["ticket"] != "OPS-1" || in.Finding != nil {
		t.Errorf("data = %v finding = %v", in.Data, in.Finding)
	}
	// A finding alone is a message: the task is derived from it.
	in, err = ParseMessage(&sdk.Message{Parts: sdk.ContentParts{sdk.DataPart{Data: map[string]any{"finding": findingMap(oomFinding())}}}})
	if err != nil || in.Finding == nil {
		t.Fatalf("finding-only message: %v %+v", err, in)
	}
}

func TestTaskFromResultAndReply(t *testing.T) {
	t.Parallel()
	fin := time.Date(2025, 9, 14, 0, 21, 59, 0, time.UTC)
	f := oomFinding()
	f.Key = f.DeriveKey()
	tests := []struct {
		name        string
		res         api.RunResult
		wantState   sdk.TaskState
		wantOutcome string
		wantAnswer  string
		wantErr     string
	}{
		{name: "completed", res: api.RunResult{RunID: "r1", Agent: "k8s-engineer", Status: api.StatusCompleted, Answer: "opened PR #4", Verdict: "fixed", Findings: []api.Finding{f}, FinishedAt: &fin},
			wantState: sdk.TaskStateCompleted, wantOutcome: OutcomeCompleted, wantAnswer: "opened PR #4"},
		{name: "partial", res: api.RunResult{RunID: "r2", Status: api.StatusPartial, Answer: "best so far", FinishedAt: &fin},
			wantState: sdk.TaskStateCompleted, wantOutcome: OutcomePartial, wantAnswer: "best so far"},
		{name: "failed", res: api.RunResult{RunID: "r3", Status: api.StatusFailed, Error: "model unavailable", FinishedAt: &fin},
			wantState: sdk.TaskStateFailed, wantOutcome: OutcomeFailed, wantErr: "model unavailable"},
		{name: "canceled", res: api.RunResult{RunID: "r4", Status: api.StatusFailed, Error: "run canceled by request", FinishedAt: &fin},
			wantState: sdk.TaskStateCanceled, wantOutcome: OutcomeCanceled, wantErr: "run canceled by request"},
		{name: "running", res: api.RunResult{RunID: "r5", Status: api.StatusRunning, StartedAt: fin},
			wantState: sdk.TaskStateWorking, wantOutcome: OutcomeAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := TaskFromResult(tt.res, "disc")
			if task.Status.State != tt.wantState || string(task.ID) != tt.res.RunID || task.ContextID != "disc" {
				t.Fatalf("task = %+v", task)
			}
			raw, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			var back sdk.Task
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("task does not survive the wire: %v\n%s", err, raw)
			}
			rep, err := ReplyFromTask(&back)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomeOf(rep); got != tt.wantOutcome {
				t.Errorf("outcome = %s, want %s", got, tt.wantOutcome)
			}
			if rep.Answer != tt.wantAnswer || rep.Error != tt.wantErr || rep.TaskID != tt.res.RunID {
				t.Errorf("reply = %+v", rep)
			}
			if len(rep.Findings) != len(tt.res.Findings) {
				t.Errorf("findings = %v, want %v", rep.Findings, tt.res.Findings)
			}
		})
	}
}

func TestCard(t *testing.T) {
	t.Parallel()
	c := Card(CardInfo{Name: "Sol", Slug: "k8s-engineer", Description: "the actor", URL: "http://sol:8000/invoke", Version: "dev",
		Skills: []SkillInfo{{Name: "sre-remediation", Description: "fix one finding"}}, Bearer: true})
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"url":"http://sol:8000/invoke"`, `"preferredTransport":"JSONRPC"`, `"protocolVersion":"0.3.0"`,
		`"streaming":true`, `"id":"sre-remediation"`, `"tags":["kubecrew","k8s-engineer"]`, `"scheme":"bearer"`, `"type":"http"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("card lacks %s: %s", want, raw)
		}
	}
	var back sdk.AgentCard
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("the SDK cannot read the card: %v", err)
	}
}

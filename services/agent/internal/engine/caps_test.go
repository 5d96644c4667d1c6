package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// echoes is one model turn asking for n echo calls.
func echoes(n int) llmtest.Reply {
	calls := make([]llmtest.Call, n)
	for i := range calls {
		calls[i] = llmtest.Call{Name: "echo", Args: fmt.Sprintf(`{"text":"%d"}`, i)}
	}
	return llmtest.ToolCalls(calls...)
}

func capEvents(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["cap"] == kind {
			out = append(out, e)
		}
	}
	return out
}

// A model asking for 50 calls in one turn gets 8 run; every other call
// is answered "not run" on the wire (each tool_call_id needs its answer),
// and the cap is a trace event.
func TestToolCallsPerTurnCap(t *testing.T) {
	r := newRig(t, rigOpts{}, echoes(50), llmtest.Text("done"), healthyReport)
	res := r.run(t, api.RunRequest{Task: "echo everything"})
	if res.Status != api.StatusCompleted || res.Answer != "done" {
		t.Fatalf("result = %+v", res)
	}
	evs := r.events(t, res.RunID)
	if n := len(eventsOf(evs, "tool_result")); n != engine.DefaultMaxCallsPerTurn {
		t.Errorf("%d calls ran, want %d", n, engine.DefaultMaxCallsPerTurn)
	}
	caps := capEvents(eventsOf(evs, "cap"), engine.CapCallsPerTurn)
	if len(caps) != 1 || caps[0]["asked"] != float64(50) || caps[0]["not_run"] != float64(42) || caps[0]["limit"] != float64(8) {
		t.Errorf("cap events = %v", caps)
	}
	var tool, notRun int
	for _, m := range r.llm.Requests()[1].Request.Messages {
		if m.Role == "tool" {
			tool++
			if strings.Contains(m.Content, "ERROR: not run: at most 8 tool calls run per turn (AGENT_MAX_TOOL_CALLS_PER_TURN) and this turn asked for 50") {
				notRun++
			}
		}
	}
	if tool != 50 || notRun != 42 {
		t.Errorf("the model was answered %d tool messages, %d 'not run'; want 50 and 42", tool, notRun)
	}
}

// The same model, asking for 50 calls every turn, makes at most 60 calls
// in a run (it made 1,000 before the cap); then it is asked once, without
// tools, for its answer, and the run is partial.
func TestToolCallsPerRunCap(t *testing.T) {
	script := []llmtest.Reply{}
	for range 8 {
		script = append(script, echoes(50))
	}
	script = append(script, llmtest.Text("what I saw in 60 echoes"), noSynthesis, noSynthesis)
	r := newRig(t, rigOpts{maxIter: 30}, script...)
	res := r.run(t, api.RunRequest{Task: "echo forever"})
	if res.Status != api.StatusPartial || res.Answer != "what I saw in 60 echoes" {
		t.Fatalf("result = %+v", res)
	}
	evs := r.events(t, res.RunID)
	if n := len(eventsOf(evs, "tool_result")); n != engine.DefaultMaxCallsPerRun {
		t.Errorf("%d calls ran, want %d", n, engine.DefaultMaxCallsPerRun)
	}
	if caps := capEvents(eventsOf(evs, "cap"), engine.CapCallsPerRun); len(caps) != 1 || caps[0]["not_run"] != float64(4) {
		t.Errorf("per-run cap events = %v", caps)
	}
	reqs := r.llm.Requests()
	// 8 turns of 8 would be 64: the eighth runs 4, then the final call.
	final := reqs[8].Request
	if len(final.Tools) != 0 || !strings.Contains(final.Messages[len(final.Messages)-1].Content, "all 60 tool calls it may make (AGENT_MAX_TOOL_CALLS_PER_RUN)") {
		t.Errorf("final request: %d tools, last message %q", len(final.Tools), final.Messages[len(final.Messages)-1].Content)
	}
	if len(reqs) != 11 || res.Iterations != 9 {
		t.Errorf("%d model requests, %d iterations; want 11 (9 loop + 2 synthesis) and 9", len(reqs), res.Iterations)
	}
}

// A 1 MB reply is cut to AGENT_MAX_REPLY_CHARS before it reaches the
// transcript, the trace and the answer; a tool call with megabyte
// arguments is not run and goes back with empty arguments.
func TestReplyCap(t *testing.T) {
	huge := strings.Repeat("All pods look fine. ", 1<<20/20)
	bigArgs := `{"text":"` + strings.Repeat("x", 40000) + `"}`
	r := newRig(t, rigOpts{},
		llmtest.ToolCalls(llmtest.Call{ID: "big", Name: "echo", Args: bigArgs}, llmtest.Call{ID: "ok", Name: "echo", Args: `{"text":"small"}`}),
		llmtest.Text(huge), noSynthesis, noSynthesis)
	res := r.run(t, api.RunRequest{Task: "report"})
	if n := utf8.RuneCountInString(res.Answer); n > engine.DefaultMaxReplyChars || !strings.Contains(res.Answer, "characters of this reply were cut") ||
		!strings.HasPrefix(res.Answer, "All pods look fine.") {
		t.Fatalf("answer of %d characters: %.200q…", n, res.Answer)
	}
	evs := r.events(t, res.RunID)
	caps := capEvents(eventsOf(evs, "cap"), engine.CapReplyChars)
	if len(caps) != 2 || caps[0]["tool"] != "echo" || caps[0]["size"] != float64(len(bigArgs)) || caps[1]["size"] != float64(len(huge)) {
		t.Errorf("reply cap events = %v", caps)
	}
	// The trace holds no megabyte: the whole run's events stay small.
	total := 0
	evsRaw, _ := r.store.Events(context.Background(), res.RunID)
	for _, e := range evsRaw {
		total += len(e.Data)
	}
	if total > 80_000 {
		t.Errorf("the trace holds %d bytes for a run with a 1 MB reply", total)
	}
	// The second request carries the call with {} and its "not run" answer; the small call ran.
	msgs := r.llm.Requests()[1].Request.Messages
	got := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			got["args:"+tc.ID] = tc.Function.Arguments
		}
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Content
		}
	}
	if got["args:big"] != "{}" || !strings.Contains(got["big"], "not run: its arguments were 40011 characters; a reply may be 16000 (AGENT_MAX_REPLY_CHARS)") ||
		!strings.Contains(got["ok"], "echo: small") {
		t.Errorf("sent back: %v", got)
	}
}

// An answer, from a model or a playbook, is cut to AGENT_MAX_ANSWER_CHARS
// with its head and tail, and the cut is a trace event.
func TestAnswerCap(t *testing.T) {
	long := "FIRST " + strings.Repeat("finding line\n", 5000) + " LAST"
	pb := engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
		run.SetAnswer(long)
		return nil
	})
	r := newRig(t, rigOpts{noModel: true, playbook: pb, limits: engine.Options{MaxAnswerChars: 2000}})
	res := r.run(t, api.RunRequest{Task: "sweep"})
	if n := utf8.RuneCountInString(res.Answer); n > 2000 || !strings.HasPrefix(res.Answer, "FIRST") || !strings.HasSuffix(res.Answer, "LAST") ||
		!strings.Contains(res.Answer, "characters of this answer cut (AGENT_MAX_ANSWER_CHARS=2000)") {
		t.Fatalf("answer (%d characters) = %.300q", n, res.Answer)
	}
	caps := capEvents(eventsOf(r.events(t, res.RunID), "cap"), engine.CapAnswerChars)
	if len(caps) != 1 || caps[0]["size"] != float64(utf8.RuneCountInString(strings.TrimSpace(long))) {
		t.Errorf("answer cap events = %v", caps)
	}
	rec, err := r.store.GetRun(context.Background(), res.RunID)
	if err != nil || rec.Answer != res.Answer {
		t.Errorf("stored answer differs from the result: %v", err)
	}
}

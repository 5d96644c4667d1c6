package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Caps on what one model may make a run do (docs/MANUAL.md, "How a run works").
// A model that asks for 50 tool calls a turn once made 1,000 calls in one
// run, and a 1 MB reply was kept whole in the answer and the trace. Each
// cap hit is a "cap" trace event and a line the model reads.
const (
	DefaultContextTokens   = 32000
	DefaultMaxCallsPerTurn = 8
	DefaultMaxCallsPerRun  = 60
	DefaultMaxReplyChars   = 16000
	DefaultMaxAnswerChars  = 16000
)

// Kinds of cap, the "cap" field of a cap event.
const (
	CapCallsPerTurn = "tool_calls_per_turn"
	CapCallsPerRun  = "tool_calls_per_run"
	CapReplyChars   = "reply_chars"
	CapAnswerChars  = "answer_chars"
)

// callsCapPrompt asks for the answer once the run's tool calls are spent.
const callsCapPrompt = "This run has made all %d tool calls it may make (AGENT_MAX_TOOL_CALLS_PER_RUN). Do not call tools. Give your best answer now from the evidence above, and say what you did not get to check."

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// cutMiddle cuts s to at most max runes, marker included: its head (2/3)
// and tail (1/3) with marker (given the number of runes cut) between them.
func cutMiddle(s string, max int, marker func(cut int) string) string {
	n := utf8.RuneCountInString(s)
	if max <= 0 || n <= max {
		return s
	}
	keep := max - utf8.RuneCountInString(marker(n)) - 2
	if keep < max/2 {
		keep = max / 2 // a marker longer than half the budget: keep half the text anyway
	}
	head := keep * 2 / 3
	tail := keep - head
	r := []rune(s)
	return string(r[:head]) + "\n" + marker(n-keep) + "\n" + string(r[n-tail:])
}

// capReply bounds one model reply before it joins the transcript and the
// trace: its text is cut to MaxReplyChars with a line saying so, and a tool
// call whose arguments are longer is kept with empty arguments and will be
// answered "not run". It returns the IDs of those calls.
func (e *Engine) capReply(ctx context.Context, r *Run, iteration int, msg *openai.ChatCompletionMessage) map[string]int {
	max := e.opts.MaxReplyChars
	if n := utf8.RuneCountInString(msg.Content); n > max {
		msg.Content = cutMiddle(msg.Content, max, func(cut int) string {
			return fmt.Sprintf("[kubecrew: %d characters of this reply were cut: a reply may be %d characters (AGENT_MAX_REPLY_CHARS); keep replies short]", cut, max)
		})
		r.Event(ctx, "cap", map[string]any{"cap": CapReplyChars, "limit": max, "size": n, "iteration": iteration})
	}
	var oversized map[string]int
	for i, tc := range msg.ToolCalls {
		if n := len(tc.Function.Arguments); n > max {
			if oversized == nil {
				oversized = map[string]int{}
			}
			oversized[tc.ID] = n
			msg.ToolCalls[i].Function.Arguments = "{}"
			r.Event(ctx, "cap", map[string]any{"cap": CapReplyChars, "limit": max, "size": n, "iteration": iteration,
				"tool": tc.Function.Name, "id": tc.ID})
		}
	}
	return oversized
}

// runCalls runs a turn's tool calls within the caps and appends one tool
// message per call (every call ID must be answered on the wire, run or
// not). outMax is each output's character budget this turn (window.go).
func (e *Engine) runCalls(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage,
	calls []openai.ToolCall, oversized map[string]int, outMax int) []openai.ChatCompletionMessage {
	perTurn, perRun := e.opts.MaxCallsPerTurn, e.opts.MaxCallsPerRun
	var overTurn, overRun int
	for i, tc := range calls {
		var out string
		switch {
		case i >= perTurn:
			overTurn++
			out = fmt.Sprintf("ERROR: not run: at most %d tool calls run per turn (AGENT_MAX_TOOL_CALLS_PER_TURN) and this turn asked for %d. Ask again for the ones you still need.", perTurn, len(calls))
		case o.toolCalls >= perRun:
			overRun++
			out = fmt.Sprintf("ERROR: not run: this run has made all %d tool calls it may make (AGENT_MAX_TOOL_CALLS_PER_RUN). Answer from the evidence you have.", perRun)
		case oversized[tc.ID] > 0:
			out = fmt.Sprintf("ERROR: not run: its arguments were %d characters; a reply may be %d (AGENT_MAX_REPLY_CHARS). Call it again with short arguments.", oversized[tc.ID], e.opts.MaxReplyChars)
		default:
			o.toolCalls++
			var oc string
			out, oc = r.callTool(ctx, tc.ID, tc.Function.Name, json.RawMessage(tc.Function.Arguments), outMax)
			if oc == tools.OutcomeError || oc == tools.OutcomePanic {
				o.toolErrors++
			}
		}
		msgs = append(msgs, openai.ChatCompletionMessage{
			Role: openai.ChatMessageRoleTool, Content: FrameToolOutput(tc.Function.Name, out), ToolCallID: tc.ID, Name: tc.Function.Name,
		})
	}
	if overTurn > 0 {
		r.Event(ctx, "cap", map[string]any{"cap": CapCallsPerTurn, "limit": perTurn, "asked": len(calls), "not_run": overTurn, "iteration": o.iterations})
	}
	if overRun > 0 {
		r.Event(ctx, "cap", map[string]any{"cap": CapCallsPerRun, "limit": perRun, "not_run": overRun, "iteration": o.iterations})
	}
	return msgs
}

// capAnswer bounds a run's answer (from a model or a playbook) before it
// leaves the agent.
func (e *Engine) capAnswer(ctx context.Context, r *Run, answer string) string {
	max := e.opts.MaxAnswerChars
	n := utf8.RuneCountInString(answer)
	if n <= max {
		return answer
	}
	r.Event(ctx, "cap", map[string]any{"cap": CapAnswerChars, "limit": max, "size": n})
	return cutMiddle(answer, max, func(cut int) string {
		return fmt.Sprintf("[… %d characters of this answer cut (AGENT_MAX_ANSWER_CHARS=%d) …]", cut, max)
	})
}

// finalAnswer makes the last model call of a run that may not continue
// (why: the iteration ceiling, the run's tool calls spent): no tools,
// prompt as the last user message, and the run is partial. It returns the
// transcript with the prompt and the answer.
func (e *Engine) finalAnswer(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage, prompt, why string) []openai.ChatCompletionMessage {
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: prompt})
	e.fitWindow(ctx, r, o, msgs, nil, 0)
	msg, err := e.chat(ctx, r, o, msgs, nil)
	o.status = api.StatusPartial
	if err != nil {
		o.err = fmt.Errorf("final answer after %s failed: %w", why, err)
		o.answer = lastAssistantText(msgs)
		return msgs
	}
	o.answer = msg.Content
	return append(msgs, msg)
}

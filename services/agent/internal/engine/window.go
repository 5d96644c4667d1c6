package engine

import (
	"context"
	"fmt"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/llm"
)

// The context budget (docs/MANUAL.md, "How a run works"). Twenty iterations of
// 8,000-character tool outputs reach ~160k characters, and a model with a
// smaller window fails outright. So every request is kept within
// AGENT_CONTEXT_TOKENS, less an eighth left for the model's reply:
//
//   - tokens are estimated (llm.EstimateRequest: bytes/3, per-message
//     overhead, the tool schemas), on the safe side;
//   - as a request nears the limit, older tool outputs are compacted,
//     oldest first, to their head and tail with a marker saying what was
//     cut (1,200 characters, then 300 if that is not enough), then older
//     long assistant texts; the system prompt, the task and the latest turn
//     (the last assistant message and its tool results) are never touched;
//   - before a turn's tool calls run, older outputs are compacted to make
//     room for them, and each output gets the share of what is left (never
//     below 1,000 characters, never above TOOL_OUTPUT_MAX_CHARS);
//   - each compaction is a "context_compacted" trace event; the trace's
//     tool_result events keep every output as the tool returned it.
const (
	compactKeep      = 1200
	compactKeepFinal = 300
	minOutputChars   = 1000
	// framingChars is what FrameToolOutput adds around an output and
	// tools.Truncate's marker inside a cut one.
	framingChars = 200
)

// windowLimit is the estimated prompt tokens a request may carry: the
// window less the reply's share, an eighth or the answer cap if larger.
func (e *Engine) windowLimit() int {
	return e.opts.ContextTokens - max(e.opts.ContextTokens/8, e.opts.ReplyTokens)
}

func estimate(msgs []openai.ChatCompletionMessage, defs []openai.Tool) int {
	return llm.EstimateRequest(openai.ChatCompletionRequest{Messages: msgs, Tools: defs})
}

// fitWindow compacts older messages of msgs, in place, until a request of
// msgs and defs leaves need tokens free under the limit, and returns the
// request's estimate after.
func (e *Engine) fitWindow(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage, defs []openai.Tool, need int) int {
	limit := e.windowLimit()
	est := estimate(msgs, defs)
	if est+need <= limit {
		return est
	}
	before := est
	latest := len(msgs)
	for i := len(msgs) - 1; i >= 2; i-- {
		if msgs[i].Role == openai.ChatMessageRoleAssistant {
			latest = i
			break
		}
	}
	if o.originalChars == nil {
		o.originalChars = map[int]int{}
	}
	var cut []map[string]any
	for _, pass := range []struct {
		role string
		keep int
	}{
		{openai.ChatMessageRoleTool, compactKeep},
		{openai.ChatMessageRoleTool, compactKeepFinal},
		{openai.ChatMessageRoleAssistant, compactKeep},
		{openai.ChatMessageRoleAssistant, compactKeepFinal},
	} {
		for i := 2; i < latest && est+need > limit; i++ {
			m := &msgs[i]
			n := utf8.RuneCountInString(m.Content)
			if m.Role != pass.role || n <= pass.keep+200 {
				continue
			}
			orig := n
			if was, ok := o.originalChars[i]; ok {
				orig = was
			}
			old := llm.EstimateMessage(*m)
			what := "tool output"
			if m.Role == openai.ChatMessageRoleAssistant {
				what = "reply"
			}
			m.Content = cutMiddle(m.Content, pass.keep, func(cut int) string {
				return fmt.Sprintf("[kubecrew: older %s compacted to fit AGENT_CONTEXT_TOKENS=%d: %d of its %d characters cut here; call the tool again if you need them]",
					what, e.opts.ContextTokens, orig-(n-cut), orig)
			})
			o.originalChars[i] = orig
			est += llm.EstimateMessage(*m) - old
			cut = append(cut, map[string]any{"index": i, "role": m.Role, "tool": m.Name, "from_chars": n, "to_chars": utf8.RuneCountInString(m.Content)})
		}
	}
	ev := map[string]any{"iteration": o.iterations + 1, "context_tokens": e.opts.ContextTokens, "limit_tokens": limit,
		"before_tokens": before, "after_tokens": est, "compacted": cut}
	if need > 0 {
		ev["room_for_tokens"] = need
	}
	if est > limit {
		// Everything older is as small as it gets: what is left is the
		// system prompt, the tool schemas, the task and the latest turn.
		ev["over"] = true
	}
	if len(cut) > 0 || est > limit {
		r.Event(ctx, "context_compacted", ev)
	}
	return est
}

// turnOutputMax makes room for a turn of n tool calls and returns each
// output's character budget.
func (e *Engine) turnOutputMax(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage, defs []openai.Tool, n int) int {
	full := e.opts.ToolOutputMax
	if n <= 0 {
		return full
	}
	per := (full+framingChars+llm.BytesPerToken-1)/llm.BytesPerToken + llm.MessageOverhead
	est := e.fitWindow(ctx, r, o, msgs, defs, n*per)
	room := e.windowLimit() - est
	chars := room*llm.BytesPerToken/n - framingChars - llm.MessageOverhead*llm.BytesPerToken
	chars = max(minOutputChars, min(full, chars))
	if chars < full {
		r.Event(ctx, "tool_output_budget", map[string]any{"iteration": o.iterations, "calls": n, "chars": chars,
			"room_tokens": room, "tool_output_max_chars": full})
	}
	return chars
}

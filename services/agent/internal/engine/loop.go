package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// ceilingPrompt asks for the best answer when the iteration budget is spent.
const ceilingPrompt = "You have reached your step limit. Do not call tools. Give your best answer now from the evidence above, say what you did not get to check, and record nothing new."

func (e *Engine) runModel(ctx context.Context, r *Run) outcome {
	if o, done := e.prepare(ctx, r); done {
		return o
	}
	p := r.Persona
	memory := e.loadMemory(ctx, r)
	system := BuildPrompt(p, PromptInput{
		Now: e.now(), Context: r.Req.Context, Memory: memory, MemoryMax: e.opts.MemoryMax,
		WorkflowType: r.Req.WorkflowType,
	})
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: r.Task()},
	}
	specs := toolDefs(r)
	var o outcome
	o.status = api.StatusCompleted
	for {
		if o.iterations >= e.opts.MaxIterations {
			// The ceiling ends the loop cleanly: one last call without tools.
			r.Event(ctx, "ceiling", map[string]any{"iterations": o.iterations, "max": e.opts.MaxIterations})
			msgs = e.finalAnswer(ctx, r, &o, msgs, ceilingPrompt, "the iteration ceiling")
			break
		}
		if o.toolCalls >= e.opts.MaxCallsPerRun {
			msgs = e.finalAnswer(ctx, r, &o, msgs, fmt.Sprintf(callsCapPrompt, e.opts.MaxCallsPerRun), "the run's tool calls were spent")
			break
		}
		e.fitWindow(ctx, r, &o, msgs, specs, 0)
		msg, err := e.chat(ctx, r, &o, msgs, specs)
		if err != nil {
			return e.modelFailed(ctx, r, o, msgs, err)
		}
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			o.answer = msg.Content
			break
		}
		runnable := min(len(msg.ToolCalls), e.opts.MaxCallsPerTurn, e.opts.MaxCallsPerRun-o.toolCalls)
		outMax := e.turnOutputMax(ctx, r, &o, msgs, specs, runnable)
		msgs = e.runCalls(ctx, r, &o, msgs, msg.ToolCalls, o.oversized, outMax)
		if ctx.Err() != nil {
			o.status = api.StatusPartial
			o.err = context.Cause(ctx)
			o.answer = lastAssistantText(msgs)
			break
		}
		if closesWork(r, msg) {
			o.answer = msg.Content
			break
		}
	}
	if rep := answerReport(o.answer); rep != nil {
		// the report came with the answer, from the same call (docs/MANUAL.md,
		// "How a run works"): no second pass over the transcript
		o.synthesis = rep
		r.Event(ctx, "synthesis_skipped", map[string]any{"reason": SkipInAnswer, "findings": len(rep.Findings), "verdict": rep.Verdict})
	} else if why := e.skipSynthesis(r, &o, msgs); why != "" {
		r.Event(ctx, "synthesis_skipped", map[string]any{"reason": why})
	} else {
		o.synthesis = e.synthesize(ctx, r, &o, msgs)
	}
	if e.opts.Backstop != nil && ctx.Err() == nil {
		if err := e.opts.Backstop(ctx, r); err != nil {
			r.log.Warn("backstop failed", zap.Error(err))
			r.Event(ctx, "backstop", map[string]any{"error": err.Error()})
			r.SetPartial("the duty the persona keeps in code failed: " + err.Error())
		}
	}
	return o
}

// modelFailed handles a model that could not answer: the transcript so far
// is kept, and the persona's playbook (the same code as deterministic mode)
// answers when there is one.
func (e *Engine) modelFailed(ctx context.Context, r *Run, o outcome, msgs []openai.ChatCompletionMessage, err error) outcome {
	o.answer = lastAssistantText(msgs)
	if ctx.Err() != nil {
		// Shutdown or RUN_TIMEOUT: the run is failed; its trace keeps what it did.
		o.status, o.err = api.StatusFailed, context.Cause(ctx)
		return o
	}
	o.err = fmt.Errorf("model unavailable: %w", err)
	if errors.Is(err, ErrTokenBudget) {
		o.err = fmt.Errorf("model not called: %w", err)
		o.note = budgetNote(r, e.opts.Playbook != nil)
	}
	if e.opts.Playbook == nil {
		o.status = api.StatusFailed
		if hasWork(msgs) {
			o.status = api.StatusPartial
		}
		return o
	}
	r.Event(ctx, "fallback_playbook", map[string]any{"reason": o.err.Error()})
	if perr := e.opts.Playbook.Run(ctx, r); perr != nil {
		o.status = fallbackStatus(perr)
		o.err = errors.Join(o.err, fmt.Errorf("deterministic playbook: %w", perr))
		return o
	}
	o.status = api.StatusPartial
	return o
}

func (e *Engine) chat(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage, defs []openai.Tool) (openai.ChatCompletionMessage, error) {
	req := openai.ChatCompletionRequest{Messages: msgs, Tools: defs, Temperature: e.opts.Temperature}
	if err := e.affordable(ctx, r, o, req); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	o.iterations++
	r.Event(ctx, "llm_request", map[string]any{"iteration": o.iterations, "messages": len(msgs), "tools": len(defs)})
	start := e.now()
	resp, endpoint, err := e.opts.Model.Chat(ctx, req)
	if err != nil {
		r.Event(ctx, "llm_response", map[string]any{"iteration": o.iterations, "error": err.Error(),
			"duration_ms": e.now().Sub(start).Milliseconds()})
		return openai.ChatCompletionMessage{}, err
	}
	e.account(r, o, passLoop, resp.Usage)
	if len(resp.Choices) == 0 {
		err := errors.New("the model answered with no choices")
		r.Event(ctx, "llm_response", map[string]any{"iteration": o.iterations, "error": err.Error(), "endpoint": endpoint})
		return openai.ChatCompletionMessage{}, err
	}
	msg := resp.Choices[0].Message
	reasoning := stripReasoning(&msg)
	o.oversized = e.capReply(ctx, r, o.iterations, &msg)
	calls := make([]map[string]string, 0, len(msg.ToolCalls))
	for _, tc := range msg.ToolCalls {
		calls = append(calls, map[string]string{"id": tc.ID, "name": tc.Function.Name, "arguments": tc.Function.Arguments})
	}
	ev := map[string]any{"iteration": o.iterations, "endpoint": endpoint,
		"content": msg.Content, "tool_calls": calls, "finish_reason": resp.Choices[0].FinishReason,
		"usage":       map[string]int{"prompt": resp.Usage.PromptTokens, "completion": resp.Usage.CompletionTokens},
		"duration_ms": e.now().Sub(start).Milliseconds()}
	if reasoning != "" {
		// Kept for the reader of the trace, bounded like a reply; never sent back.
		ev["reasoning"] = cutMiddle(reasoning, e.opts.MaxReplyChars, func(cut int) string {
			return fmt.Sprintf("[… %d characters of reasoning cut (AGENT_MAX_REPLY_CHARS) …]", cut)
		})
	}
	if msg.Refusal != "" {
		ev["refusal"] = msg.Refusal
	}
	r.Event(ctx, "llm_response", ev)
	return msg, nil
}

// closesWork: the reply carries the report (the output contract) beside
// calls that act, hand off or record, none that reads. The calls were the
// actions the report states and have run; the model is not asked again
// (docs/MANUAL.md "How a run works"). A reply that also reads gets the next call.
func closesWork(r *Run, msg openai.ChatCompletionMessage) bool {
	if answerReport(msg.Content) == nil {
		return false
	}
	for _, tc := range msg.ToolCalls {
		if t, ok := r.e.opts.Tools.Get(tc.Function.Name); !noRead[tc.Function.Name] && (!ok || !t.Mutating()) {
			return false
		}
	}
	return true
}

// noRead are the calls that are not mutating and read nothing either: the
// A2A verbs that pass work on (internal/a2aclient) and the built-ins that
// record (a finding, a memory note).
var noRead = map[string]bool{"delegate_task": true, "notify_agent": true, "report_finding": true, "memory_write": true}

func toolDefs(r *Run) []openai.Tool {
	var out []openai.Tool
	for _, s := range r.Tools.Specs() {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: s.Parameters,
		}})
	}
	return out
}

func lastAssistantText(msgs []openai.ChatCompletionMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleAssistant && strings.TrimSpace(msgs[i].Content) != "" {
			return msgs[i].Content
		}
	}
	return ""
}

func (e *Engine) loadMemory(ctx context.Context, r *Run) string {
	f, err := e.opts.Store.ReadMemory(ctx, e.opts.Agent.Slug, "/memories/memory.md")
	if err != nil {
		return ""
	}
	return f.Content
}

// hasWork reports whether the transcript holds any model answer or tool
// result worth keeping.
func hasWork(msgs []openai.ChatCompletionMessage) bool {
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleAssistant || m.Role == openai.ChatMessageRoleTool {
			return true
		}
	}
	return false
}

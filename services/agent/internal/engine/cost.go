package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm"
)

// Why a run skips the synthesis pass (trace event synthesis_skipped): a
// model call is paid only when it can add something (docs/MANUAL.md, "Model
// cost").
const (
	SkipReported = "report_finding gave the findings"
	SkipQuestion = "a question answered without tools: no structured report needed"
	SkipBudget   = "the token budget does not cover it"
	SkipInAnswer = "the answer carried the report (output contract)"
)

// skipSynthesis says why the synthesis pass would add nothing to this run,
// or "" when it is needed:
//   - report_finding already recorded the findings (they win over
//     synthesis anyway) and the run took no action whose verdict the pass
//     would state (an action run keeps the pass: action_taken, approve, …);
//   - a question (manual or a2a-ask) answered without a single tool call:
//     there is no evidence to structure, the answer is the result.
//   - the token budget would not cover it.
func (e *Engine) skipSynthesis(r *Run, o *outcome, msgs []openai.ChatCompletionMessage) string {
	if len(r.Reported()) > 0 && !r.acted() {
		return SkipReported
	}
	switch r.Req.WorkflowType {
	case api.WorkflowManual, api.WorkflowA2AAsk:
		if !calledTools(msgs) {
			return SkipQuestion
		}
	}
	est := llm.EstimateTokens(synthesisPrompt) + llm.EstimateTokens(renderTranscript(msgs)) + llm.EstimateTokens(string(reportSchema))
	if err := e.ledger.check(o.tokens.Prompt+o.tokens.Completion, est); err != nil {
		return SkipBudget + ": " + err.Error()
	}
	return ""
}

// acted reports whether the run called a tool that changes something
// outside the run (tools.Tool.Mutating), its own memory notes aside.
func (r *Run) acted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.calls {
		if strings.HasPrefix(name, "memory_") {
			continue
		}
		if t, ok := r.e.opts.Tools.Get(name); ok && t.Mutating() {
			return true
		}
	}
	return false
}

func calledTools(msgs []openai.ChatCompletionMessage) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// Model passes, the pass label of kubecrew_agent_model_calls_total.
const (
	passLoop      = "loop"
	passSynthesis = "synthesis"
)

// account adds one model answer's usage to the run's outcome and to the
// metrics: every model call, loop or synthesis, is counted the same way.
func (e *Engine) account(r *Run, o *outcome, pass string, u openai.Usage) {
	o.calls++
	o.tokens.Prompt += u.PromptTokens
	o.tokens.Completion += u.CompletionTokens
	e.metrics.modelCalls.WithLabelValues(r.Req.WorkflowType, pass).Inc()
	e.metrics.tokens.WithLabelValues("prompt").Add(float64(u.PromptTokens))
	e.metrics.tokens.WithLabelValues("completion").Add(float64(u.CompletionTokens))
	e.ledger.spend(u.PromptTokens + u.CompletionTokens)
}

// affordable refuses a model call the token budget does not cover: the
// request is estimated (llm.EstimateRequest, on the safe side) before it
// is sent, so a ceiling is never crossed by more than one answer's
// completion. The refusal is a trace event and a metric.
func (e *Engine) affordable(ctx context.Context, r *Run, o *outcome, req openai.ChatCompletionRequest) error {
	err := e.ledger.check(o.tokens.Prompt+o.tokens.Completion, llm.EstimateRequest(req))
	var be *budgetError
	if !errors.As(err, &be) {
		return err
	}
	e.metrics.budgetRefusals.WithLabelValues(be.scope).Inc()
	r.Event(ctx, "token_budget", map[string]any{"scope": be.scope, "setting": be.setting, "limit": be.limit,
		"used": be.used, "next_estimate": be.next, "run_used": o.tokens.Prompt + o.tokens.Completion})
	return err
}

// budgetNote opens the answer of a run the token budget stopped.
func budgetNote(r *Run, playbook bool) string {
	if playbook {
		return "The model token budget is spent, so this run used the deterministic playbook (see AGENT_TOKEN_BUDGET, AGENT_RUN_TOKEN_BUDGET and GET /info)."
	}
	return fmt.Sprintf("The model token budget is spent, and %s has no deterministic playbook for this task: it was not done (see AGENT_TOKEN_BUDGET, AGENT_RUN_TOKEN_BUDGET and GET /info).", r.Agent().Name)
}

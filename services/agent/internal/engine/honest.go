package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Honest status (docs/MANUAL.md, "How a run works"): a run that could not do its
// task ends failed or partial with the reason, never completed. A run's code
// says so with SetPartial (a review that could not read every file, a duty
// that could not be done); the engine knows the rest from the run itself:
//
//   - its hand-off failed, or the delegate was busy and started nothing, or
//     the delegate's action failed;
//   - its own action failed (verdict action_failed);
//   - the structured report was needed, its pass failed, and no finding
//     came from anywhere else;
//   - every tool call the model made failed (an error or a panic; a gate's
//     denial is the gate working, an unknown tool the model's slip).

// SetPartial records that the run did its task only in part, and why; a
// run that would have ended completed ends partial, the reasons in its
// error.
func (r *Run) SetPartial(reason string) {
	r.mu.Lock()
	r.partial = append(r.partial, reason)
	r.mu.Unlock()
}

// honest turns a completed outcome partial when the run did not do its task.
func (e *Engine) honest(ctx context.Context, r *Run, o outcome, verdict string, d *api.Delegation, source string) outcome {
	if o.status != api.StatusCompleted {
		return o
	}
	r.mu.Lock()
	reasons := append([]string(nil), r.partial...)
	r.mu.Unlock()
	reasons = append(reasons, undone(o, verdict, d, source)...)
	if len(reasons) == 0 {
		return o
	}
	why := strings.Join(reasons, "; ")
	o.status = api.StatusPartial
	if o.err == nil {
		o.err = errors.New(why)
	} else {
		o.err = fmt.Errorf("%w; %s", o.err, why)
	}
	r.Event(ctx, "partial", map[string]any{"reasons": reasons})
	return o
}

// undone lists why a run that would end completed did not do its task.
func undone(o outcome, verdict string, d *api.Delegation, source string) []string {
	var out []string
	if d != nil {
		switch {
		case d.Busy:
			out = append(out, fmt.Sprintf("%s was at capacity and started nothing: the finding is to be handed over again", d.To))
		case d.Outcome() == api.VerdictDelegationFailed && d.Verdict == api.VerdictActionFailed:
			out = append(out, fmt.Sprintf("%s's action failed: %s", d.To, firstLine(d.Result)))
		case d.Outcome() == api.VerdictDelegationFailed:
			out = append(out, fmt.Sprintf("the hand-off to %s failed: %s", d.To, firstLine(d.Error)))
		}
	}
	if verdict == api.VerdictActionFailed {
		out = append(out, "the action failed")
	}
	if o.synthErr != nil && source == "none" {
		out = append(out, "no structured report and no finding: "+o.synthErr.Error())
	}
	// A playbook handles its own tools' errors; the model's are counted.
	if o.toolCalls > 0 && o.toolErrors == o.toolCalls {
		out = append(out, fmt.Sprintf("every tool call failed (%d)", o.toolErrors))
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return "no reason given"
	}
	return cutMiddle(s, 300, func(cut int) string { return fmt.Sprintf("[… %d cut …]", cut) })
}

// fallbackStatus is the status of a run whose playbook returned err (run
// without a model, or answering for it): a playbook that did its task in
// part (Partial) leaves the run partial, its answer and findings kept; any
// other error fails it.
func fallbackStatus(err error) string {
	if p := (*Partial)(nil); errors.As(err, &p) {
		return api.StatusPartial
	}
	return api.StatusFailed
}

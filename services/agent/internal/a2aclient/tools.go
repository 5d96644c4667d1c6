package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Tool names (canonical; every persona has them).
const (
	ToolAsk      = "ask_agent"
	ToolNotify   = "notify_agent"
	ToolDelegate = "delegate_task"
)

var errNoRun = errors.New("this tool only works inside a run")

// agent_slug's enum is persona.All's slugs, in order: a struct tag must be a
// literal, and TestAgentSlugEnumIsTheFleet holds the two equal. A persona
// name is still accepted (a2a.Peers.Resolve).
type askArgs struct {
	AgentSlug string `json:"agent_slug" enum:"platform-sre,k8s-engineer,code-reviewer,cicd-engineer,backend-architect"`
	Question  string `json:"question" description:"the whole question; the agent sees nothing else of your run"`
}

type notifyArgs struct {
	AgentSlug string `json:"agent_slug" enum:"platform-sre,k8s-engineer,code-reviewer,cicd-engineer,backend-architect"`
	Message   string `json:"message" description:"what it should know; it gets no other context"`
}

type delegateArgs struct {
	AgentSlug string                    `json:"agent_slug" enum:"platform-sre,k8s-engineer,code-reviewer,cicd-engineer,backend-architect"`
	Decision  string                    `json:"decision" description:"what to do to which workload, and why"`
	Finding   *api.DelegatedFindingArgs `json:"finding,omitempty"`
	Evidence  string                    `json:"evidence,omitempty"`
}

// Tools returns ask_agent, notify_agent and delegate_task. None of them is
// mutating: they change nothing themselves; the receiving agent's own gates
// decide what it may do.
func (s *Client) Tools() []tools.Tool {
	return []tools.Tool{
		tools.New(ToolAsk, "Ask another agent a question and wait for its answer.", false,
			func(ctx context.Context, a askArgs) (string, error) {
				res, err := s.call(ctx, engine.RunFrom(ctx), a2a.VerbAsk, a.AgentSlug, a.Question, nil)
				if msg, ok := busyAnswer(err); ok {
					return msg, nil
				}
				if err != nil {
					return "", err
				}
				return describe(res, "answered"), nil
			}),
		tools.New(ToolNotify, "Tell another agent something without waiting; it acts on it on its own.", false,
			func(ctx context.Context, a notifyArgs) (string, error) {
				res, err := s.call(ctx, engine.RunFrom(ctx), a2a.VerbNotify, a.AgentSlug, a.Message, nil)
				if msg, ok := busyAnswer(err); ok {
					return msg, nil
				}
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s accepted the message (task %s); it works on it on its own and will not answer you.", res.Peer.Slug, res.TaskID), nil
			}),
		tools.New(ToolDelegate, "Hand a decision (not a question) to the agent that may act on it, with the finding and evidence, and wait for its result.", false,
			func(ctx context.Context, a delegateArgs) (string, error) {
				r := engine.RunFrom(ctx)
				if r == nil {
					return "", errNoRun
				}
				text := strings.TrimSpace(a.Decision)
				if text == "" {
					return "", errors.New("decision is required: say what the agent must do")
				}
				if ev := strings.TrimSpace(a.Evidence); ev != "" {
					text += "\n\nEvidence:\n" + ev
				}
				var f *api.Finding
				if a.Finding != nil {
					nf, err := a2a.NormalizeFinding(api.FindingFrom(api.FindingArgs(*a.Finding)))
					if err != nil {
						return "", err
					}
					s.attachEvidence(ctx, &nf)
					f = &nf
				}
				res, err := s.call(ctx, r, a2a.VerbDelegate, a.AgentSlug, text, f)
				// A failed attempt does not overwrite a hand-off that reached
				// its agent: the record says what was actually delegated.
				if d := delegation(a.AgentSlug, f, res, err); d.Sent || r.Delegation() == nil {
					r.SetDelegation(d)
				}
				if msg, ok := busyAnswer(err); ok {
					return msg, nil
				}
				if err != nil {
					return "", err
				}
				return describe(res, "did the delegated work"), nil
			}),
	}
}

// call sends one message from run r: depth, discussion and trace come from
// the run; the trace records a2a_send.
func (s *Client) call(ctx context.Context, r *engine.Run, verb a2a.Verb, to, text string, f *api.Finding) (a2a.Result, error) {
	if r == nil {
		return a2a.Result{}, errNoRun
	}
	discussion := r.Req.DiscussionID
	if discussion == "" {
		discussion = r.ID // the run that starts a discussion names it
	}
	call := a2a.Call{
		To: to, Verb: verb, Text: text, Finding: f, RunDepth: r.Req.SocialDepth,
		DiscussionID: discussion, TraceID: s.o.Traces.Of(r), CallerRunID: r.ID,
	}
	start := s.o.Now()
	res, err := s.client.Send(ctx, call)
	ev := map[string]any{
		"to": to, "verb": verb, "depth": a2a.OutgoingDepth(r.Req.SocialDepth), "discussion_id": discussion,
		"trace_id": call.TraceID, "text": text, "message_id": res.MessageID, "audit_id": res.AuditID,
		"outcome": res.Outcome, "callee_run_id": res.TaskID, "duration_ms": s.o.Now().Sub(start).Milliseconds(),
	}
	if res.Peer.Slug != "" {
		ev["to"] = res.Peer.Slug
	}
	if f != nil {
		ev["finding"] = f
	}
	if err != nil {
		ev["error"] = err.Error()
		if res.Outcome == "" {
			ev["outcome"] = a2a.OutcomeRefused // rejected before anything was sent (unknown agent, bad input)
		}
	}
	r.Event(ctx, "a2a_send", ev)
	return res, err
}

// busyAnswer is a tool's answer when the peer was at capacity: not an
// error — nothing was started, and the message can be sent again later.
func busyAnswer(err error) (string, bool) {
	var ce *a2a.CallError
	if !errors.As(err, &ce) || ce.Outcome != a2a.OutcomeBusy {
		return "", false
	}
	return ce.Error() + ". This is not a failure: send it again after that, or leave it for the next sweep.", true
}

// describe is a tool's answer about a finished call.
func describe(res a2a.Result, verbed string) string {
	var b strings.Builder
	switch res.Outcome {
	case a2a.OutcomeCompleted, a2a.OutcomePartial:
		fmt.Fprintf(&b, "%s %s (task %s, %s).", res.Peer.Slug, verbed, res.TaskID, res.Outcome)
	default:
		fmt.Fprintf(&b, "%s's run ended %s (task %s).", res.Peer.Slug, res.Outcome, res.TaskID)
		if res.Error != "" {
			fmt.Fprintf(&b, " Error: %s", res.Error)
		}
	}
	if res.Verdict != "" {
		fmt.Fprintf(&b, "\nVerdict: %s", res.Verdict)
	}
	if res.Answer != "" {
		fmt.Fprintf(&b, "\nAnswer:\n%s", res.Answer)
	}
	if len(res.Findings) > 0 {
		fmt.Fprintf(&b, "\n%s", a2a.Summary(res.Findings))
	}
	return b.String()
}

// delegation is the record of a hand-off for the run result.
func delegation(to string, f *api.Finding, res a2a.Result, err error) api.Delegation {
	d := api.Delegation{To: to, RunID: res.TaskID, Sent: res.TaskID != "", Verdict: res.Verdict}
	if res.Peer.Slug != "" {
		d.To = res.Peer.Slug
	}
	if f != nil {
		d.Finding = *f
	}
	switch {
	case err != nil:
		d.Error = err.Error()
		d.Busy = res.Outcome == a2a.OutcomeBusy
	case res.Outcome == a2a.OutcomeCompleted || res.Outcome == a2a.OutcomePartial || res.Outcome == a2a.OutcomeAccepted:
		d.Result = res.Answer
		if d.Result == "" {
			d.Result = res.Outcome
		}
	default:
		d.Result = res.Answer
		d.Error = fmt.Sprintf("%s's run ended %s", d.To, res.Outcome)
		if res.Error != "" {
			d.Error += ": " + res.Error
		}
	}
	return d
}

// Delegate implements engine.Delegator: the finding goes as the data part
// {"finding": …} with the instruction as text, blocking up to
// A2A_CALL_TIMEOUT; the callee's run id and answer come back.
func (s *Client) Delegate(ctx context.Context, r *engine.Run, to string, f api.Finding, instruction string) api.Delegation {
	nf, err := a2a.NormalizeFinding(f)
	if err != nil {
		return api.Delegation{To: to, Finding: f, Error: "not sent: " + err.Error()}
	}
	s.attachEvidence(ctx, &nf)
	text := strings.TrimSpace(instruction)
	if text == "" {
		text = fmt.Sprintf("Fix %s: %s on %s %s/%s.", nf.Key, nf.Reason, nf.Kind, nf.Namespace, nf.Name)
	}
	res, err := s.call(ctx, r, a2a.VerbDelegate, to, text, &nf)
	return delegation(to, &nf, res, err)
}

var _ engine.Delegator = (*Client)(nil)

// attachEvidence sets a delegated finding's typed evidence to what the
// cluster shows now (Options.Evidence), replacing whatever it carried:
// a model's words never become evidence, and a sweep's reading is
// refreshed. Without a reader the finding is sent as it is.
func (s *Client) attachEvidence(ctx context.Context, f *api.Finding) {
	if s.o.Evidence == nil {
		return
	}
	f.ConfigChange, f.OOMKill = s.o.Evidence.FindingEvidence(ctx, *f)
}

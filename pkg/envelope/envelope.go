// Package envelope is the action envelope (docs/MANUAL.md, "The action
// envelope"): what every mutating primitive asks right before it writes.
// In order: the kill switch (one row in the store, read at every call), the
// namespaces that opted in (never a system namespace), shadow mode
// (ACTIONS_MODE=propose, per namespace), then the budgets (restarts per
// hour, memory bumps per 30 days, a ceiling over the first limit seen).
// Every decision is recorded in the store and in the run's trace.
package envelope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/killswitch"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Store is what the envelope keeps: the kill switch and the history.
type Store interface {
	ActionsState(ctx context.Context) (store.ActionsState, error)
	RecordAction(ctx context.Context, r store.ActionRecord) error
	ListActions(ctx context.Context, f store.ActionFilter, limit int) ([]store.ActionRecord, error)
}

// Namespaces reads a namespace's labels (the cluster client).
type Namespaces interface {
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// Label is the namespace label that opts a namespace in: "act" (the
// fleet may act), "propose" (it only proposes), "enabled" (ACTIONS_MODE
// decides). Any other value, or none, and the fleet does not act there.
const Label = "kubecrew.io/actions"

// Modes.
const (
	ModeAct     = "act"
	ModePropose = "propose"
)

// SystemNamespaces are never acted in, whatever their labels say.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Actions whose budgets are counted: restarts, memory-bump PRs opened,
// and memory-bump PRs merged (what reaches production), each on its own.
const (
	ActionRestart tools.Action = "k8s.rollout.restart"
	ActionBump    tools.Action = "gitops.pr.open"
	ActionMerge   tools.Action = "gitops.pr.mergetrivial"
)

// Follower starts the follow-up check of an action that was done
// (services/agent/internal/verify).
type Follower interface {
	Follow(r store.ActionRecord)
}

// Config are the envelope's settings (ACTIONS_* in the agent's
// environment). Zero values take the defaults.
type Config struct {
	Agent string // who acts (the agent slug)
	// Mode is ACTIONS_MODE: act (default) or propose.
	Mode string
	// Allow lists namespaces opted in without the label (ACTIONS_NAMESPACES).
	Allow []string
	// FleetNamespace is the fleet's own namespace, never acted in.
	FleetNamespace string
	// RestartsPerHour per workload (default 3); FleetRestartsPerHour over
	// every workload (default 10).
	RestartsPerHour, FleetRestartsPerHour int
	// BumpsPer30Days per workload (default 3); FleetBumpsPer30Days over
	// every workload (default 30).
	BumpsPer30Days, FleetBumpsPer30Days int
	// MaxGrowth: a memory limit never goes above MaxGrowth × the value
	// first seen for that container (default 4).
	MaxGrowth float64
	// Follow checks every action that was done, after it took effect
	// (docs/MANUAL.md, "The action envelope": verify, then escalate); nil: none.
	Follow Follower
	Now    func() time.Time
	Log    *zap.Logger
}

// Defaults of Config.
const (
	DefaultRestartsPerHour      = 3
	DefaultFleetRestartsPerHour = 10
	DefaultBumpsPer30Days       = 3
	DefaultFleetBumpsPer30Days  = 30
	DefaultMaxGrowth            = 4.0
)

func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeAct
	}
	if c.RestartsPerHour <= 0 {
		c.RestartsPerHour = DefaultRestartsPerHour
	}
	if c.FleetRestartsPerHour <= 0 {
		c.FleetRestartsPerHour = DefaultFleetRestartsPerHour
	}
	if c.BumpsPer30Days <= 0 {
		c.BumpsPer30Days = DefaultBumpsPer30Days
	}
	if c.FleetBumpsPer30Days <= 0 {
		c.FleetBumpsPer30Days = DefaultFleetBumpsPer30Days
	}
	if c.MaxGrowth <= 1 {
		c.MaxGrowth = DefaultMaxGrowth
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return c
}

// ParseMode checks an ACTIONS_MODE value ("" is act).
func ParseMode(s string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "", ModeAct:
		return ModeAct, nil
	case ModePropose:
		return ModePropose, nil
	default:
		return "", fmt.Errorf("%q: want act or propose", s)
	}
}

// Envelope implements tools.Envelope.
type Envelope struct {
	st  Store
	ns  Namespaces // nil: only the allowlist opts namespaces in
	cfg Config
}

var _ tools.Envelope = (*Envelope)(nil)

// New returns the envelope over st; ns reads namespace labels (nil: the
// allowlist alone decides).
func New(st Store, ns Namespaces, cfg Config) *Envelope {
	return &Envelope{st: st, ns: ns, cfg: cfg.withDefaults()}
}

// What a primitive answers instead of the change when the envelope did not
// let it act: the first words of a proposal and of a recommendation.
const (
	ProposedPrefix    = "PROPOSED, NOT DONE"
	RecommendedPrefix = "RECOMMENDED FOR A HUMAN, NOT DONE"
)

// ErrPaused is wrapped by every refusal of the kill switch.
var ErrPaused = errors.New("actions are paused")

// Paused returns the kill switch's line ("paused by <who> at <when>:
// <reason>") and whether actions are paused. An unreadable switch counts
// as paused: the envelope fails closed.
func (e *Envelope) Paused(ctx context.Context) (string, bool) {
	st, err := e.st.ActionsState(ctx)
	if err != nil {
		return "the kill switch could not be read (" + err.Error() + "); acting as paused", true
	}
	if !st.Paused {
		return "", false
	}
	return killswitch.Line(st), true
}

// Permit implements tools.Envelope.
func (e *Envelope) Permit(ctx context.Context, a tools.Action, t tools.Change) (tools.Verdict, error) {
	if line, paused := e.Paused(ctx); paused {
		return tools.Verdict{}, e.refuse(ctx, a, t, fmt.Errorf("%w: %s %s refused — %s; this run continues read-only", tools.ErrDenied, a, describe(t), line))
	}
	mode, err := e.namespaceMode(ctx, t.Namespace)
	if err != nil {
		return tools.Verdict{}, e.refuse(ctx, a, t, fmt.Errorf("%w: %s %s refused — %v", tools.ErrDenied, a, describe(t), err))
	}
	if mode == ModePropose {
		return e.propose(ctx, a, t)
	}
	if why, history, over := e.overBudget(ctx, a, t); over {
		return e.recommend(ctx, a, t, why, history)
	}
	e.trace(ctx, a, t, "act", "namespace "+t.Namespace+" opted in; within budget")
	return tools.Verdict{Act: true}, nil
}

// Done implements tools.Envelope.
func (e *Envelope) Done(ctx context.Context, a tools.Action, t tools.Change) {
	r := e.record(ctx, a, t, store.ActionDone, "")
	if e.cfg.Follow != nil {
		e.cfg.Follow.Follow(r)
	}
}

// namespaceMode says whether the fleet may act in ns and how: act or
// propose, or an error saying why not.
func (e *Envelope) namespaceMode(ctx context.Context, ns string) (string, error) {
	if ns == "" {
		// A change with no namespace of its own (a PR merge): the fleet mode.
		return e.cfg.Mode, nil
	}
	if slices.Contains(SystemNamespaces, ns) || (e.cfg.FleetNamespace != "" && ns == e.cfg.FleetNamespace) {
		return "", fmt.Errorf("namespace %s is a system namespace or the fleet's own; kubecrew never acts there", ns)
	}
	var labels map[string]string
	if e.ns != nil {
		var err error
		if labels, err = e.ns.NamespaceLabels(ctx, ns); err != nil && !slices.Contains(e.cfg.Allow, ns) {
			return "", fmt.Errorf("namespace %s: its %s label could not be read: %w", ns, Label, err)
		}
	}
	switch v := labels[Label]; v {
	case ModeAct, ModePropose:
		return v, nil
	case "enabled":
		return e.cfg.Mode, nil
	case "":
		if slices.Contains(e.cfg.Allow, ns) {
			return e.cfg.Mode, nil
		}
		return "", fmt.Errorf("namespace %s has not opted in (label it %s=enabled, or list it in ACTIONS_NAMESPACES)", ns, Label)
	default:
		return "", fmt.Errorf("namespace %s: %s=%q is not act, propose or enabled", ns, Label, v)
	}
}

func (e *Envelope) propose(ctx context.Context, a tools.Action, t tools.Change) (tools.Verdict, error) {
	e.record(ctx, a, t, store.ActionProposed, "shadow mode (propose)")
	e.trace(ctx, a, t, "propose", "shadow mode: the change is prepared and recorded, not made")
	return tools.Verdict{Answer: fmt.Sprintf(ProposedPrefix+": %s %s — actions in namespace %s are in propose mode (shadow mode). "+
		"The exact change is recorded for a human (GET /actions/proposals on this agent, GET /api/v1/actions/proposals on the core):\n%s\n",
		a, describe(t), nsOrFleet(t.Namespace), t.Change)}, nil
}

func (e *Envelope) recommend(ctx context.Context, a tools.Action, t tools.Change, why string, history []store.ActionRecord) (tools.Verdict, error) {
	var b strings.Builder
	for _, r := range history {
		fmt.Fprintf(&b, "  %s %s %s/%s/%s", r.At.UTC().Format(time.RFC3339), r.Action, r.Namespace, r.Kind, r.Name)
		if r.Old != "" || r.New != "" {
			fmt.Fprintf(&b, " %s -> %s", r.Old, r.New)
		}
		b.WriteByte('\n')
	}
	e.record(ctx, a, t, store.ActionRecommended, why+"\n"+b.String())
	e.trace(ctx, a, t, "recommend", why)
	return tools.Verdict{Answer: fmt.Sprintf(RecommendedPrefix+": %s %s — %s. Report it as a finding for a person with this history:\n%s"+
		"The change that would have been made:\n%s\n", a, describe(t), why, b.String(), t.Change)}, nil
}

func (e *Envelope) refuse(ctx context.Context, a tools.Action, t tools.Change, err error) error {
	e.record(ctx, a, t, store.ActionRefused, err.Error())
	e.trace(ctx, a, t, "refuse", err.Error())
	e.cfg.Log.Info("envelope refused an action", zap.String("action", string(a)), zap.String("target", describe(t)), zap.Error(err))
	return err
}

func (e *Envelope) record(ctx context.Context, a tools.Action, t tools.Change, outcome, why string) store.ActionRecord {
	r := store.ActionRecord{Agent: e.cfg.Agent, RunID: tools.RunInfoFrom(ctx).ID, Action: string(a), Namespace: t.Namespace,
		Kind: t.Kind, Name: t.Name, Container: t.Container, Outcome: outcome, Old: t.Old, New: t.New, Change: t.Change, Why: why,
		At: e.cfg.Now()}
	if r.Agent == "" {
		r.Agent = "unknown"
	}
	if r.ID == "" {
		r.ID = store.NewID()
	}
	if err := e.st.RecordAction(context.WithoutCancel(ctx), r); err != nil {
		e.cfg.Log.Warn("envelope: action not recorded", zap.String("outcome", outcome), zap.Error(err))
	}
	return r
}

func (e *Envelope) trace(ctx context.Context, a tools.Action, t tools.Change, decision, why string) {
	tools.Trace(ctx, "envelope", map[string]any{"action": string(a), "target": describe(t), "decision": decision, "why": why})
}

func describe(t tools.Change) string {
	var parts []string
	for _, p := range []string{t.Namespace, t.Kind, t.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := strings.Join(parts, "/")
	if t.Container != "" {
		s += " container " + t.Container
	}
	if t.Old != "" || t.New != "" {
		s += fmt.Sprintf(" (%s -> %s)", t.Old, t.New)
	}
	return s
}

func nsOrFleet(ns string) string {
	if ns == "" {
		return "(fleet-wide)"
	}
	return ns
}

package tools

import (
	"context"
	"fmt"
	"strings"
)

// Target is the one workload an autonomous run may change: the workload of
// the finding it was delegated (context.finding). It is the scope gate:
// text the run reads (a log line, an event, an annotation, another agent's
// message) cannot point a write at anything else (docs/MANUAL.md, "Prompt
// injection is data").
type Target struct {
	Kind, Namespace, Name string
}

func (t Target) String() string {
	return fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name)
}

type scopeKey struct{}

// scope is what a run may change: one target, or nothing.
type scope struct {
	target Target
	has    bool
}

// WithTarget returns ctx scoped to the target t.
func WithTarget(ctx context.Context, t Target) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope{target: t, has: true})
}

// WithNoTarget returns ctx scoped to nothing: an autonomous run that was
// not delegated a finding changes no workload.
func WithNoTarget(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope{})
}

// TargetFrom returns the run's target, if it has one.
func TargetFrom(ctx context.Context) (Target, bool) {
	s, _ := ctx.Value(scopeKey{}).(scope)
	return s.target, s.has
}

// CheckTarget is the scope gate every workload-changing primitive calls
// with the workload it is about to change (after Check): an interactive
// run may change any workload; an autonomous run that the engine scoped
// (it scopes every one) only its target, and nothing when it has none.
// A context no run scoped (a library caller) is not checked. kind may be a
// Kind ("Deployment") or a resource ("deployments").
func CheckTarget(ctx context.Context, kind, namespace, name string) error {
	if ModeFrom(ctx) == ModeInteractive {
		return nil
	}
	s, scoped := ctx.Value(scopeKey{}).(scope)
	if !scoped {
		return nil
	}
	t, ok := s.target, s.has
	want := Target{Kind: kind, Namespace: namespace, Name: name}
	if !ok {
		return fmt.Errorf("%w: %s is not the workload of a delegated finding; an autonomous run changes only the workload it was delegated", ErrDenied, want)
	}
	if normKind(t.Kind) != normKind(kind) || t.Namespace != namespace || t.Name != name {
		return fmt.Errorf("%w: this run was delegated %s; it may not change %s", ErrDenied, t, want)
	}
	return nil
}

// normKind maps "Deployment", "deployments" and "deployment" to one form.
func normKind(k string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(k)), "s")
}

package tools

import "context"

// Change is what a mutating primitive is about to change, as the action
// envelope (docs/MANUAL.md, "The action envelope") judges it.
type Change struct {
	Namespace, Kind, Name, Container string
	// Old and New are a memory bump's values ("" otherwise).
	Old, New string
	// Change is the exact change: the restart patch, the PR diff.
	Change string
}

// Verdict is the envelope's answer to a change it did not refuse.
type Verdict struct {
	// Act: make the change, then call Envelope.Done.
	Act bool
	// Answer replaces the change when Act is false: a proposal (shadow
	// mode) or a recommendation for a human (over a budget), recorded.
	Answer string
}

// Envelope bounds every mutating primitive beyond the run mode: the kill
// switch, the namespaces that opted in, budgets and shadow mode. The
// primitives call Permit right before they write, with the change fully
// prepared, and Done after the write succeeded.
type Envelope interface {
	// Permit refuses (an error wrapping ErrDenied) or answers how to go on.
	Permit(ctx context.Context, a Action, t Change) (Verdict, error)
	// Done records a change that was made, for the budgets.
	Done(ctx context.Context, a Action, t Change)
}

// RunInfo is what a run tells the primitives it calls: its id, and a way
// to add an event to its trace.
type RunInfo struct {
	ID    string
	Trace func(typ string, data map[string]any)
}

type runInfoKey struct{}

// WithRunInfo returns ctx carrying ri.
func WithRunInfo(ctx context.Context, ri RunInfo) context.Context {
	return context.WithValue(ctx, runInfoKey{}, ri)
}

// RunInfoFrom returns the run's info; the zero value outside a run.
func RunInfoFrom(ctx context.Context) RunInfo {
	ri, _ := ctx.Value(runInfoKey{}).(RunInfo)
	return ri
}

// Trace adds an event to the trace of the run in ctx, if any.
func Trace(ctx context.Context, typ string, data map[string]any) {
	if ri := RunInfoFrom(ctx); ri.Trace != nil {
		ri.Trace(typ, data)
	}
}

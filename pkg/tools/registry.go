package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// Registry holds every tool the binary knows. Resolve picks the ones a
// persona is configured with.
type Registry struct {
	tools map[string]Tool
}

// NewRegistry returns a registry holding ts. Duplicate names panic: two tools
// claiming one name is a programming error.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range ts {
		r.Add(t)
	}
	return r
}

// Add registers t.
func (r *Registry) Add(t Tool) {
	if _, dup := r.tools[t.Name()]; dup {
		panic("tools: duplicate tool " + t.Name())
	}
	r.tools[t.Name()] = t
}

// Names lists every registered name, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the tool named n.
func (r *Registry) Get(n string) (Tool, bool) {
	t, ok := r.tools[n]
	return t, ok
}

// UnknownToolError names a configured tool the registry does not have.
type UnknownToolError struct {
	Name  string
	Known []string
}

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Resolve returns the tools named in names, in that order, without
// duplicates. An unknown name is an error: it fails the start, not a run.
func (r *Registry) Resolve(names []string) (Set, error) {
	var s Set
	seen := map[string]bool{}
	for _, raw := range names {
		n := strings.TrimSpace(raw)
		if n == "" || seen[n] {
			continue
		}
		t, ok := r.tools[n]
		if !ok {
			return nil, &UnknownToolError{Name: n, Known: r.Names()}
		}
		seen[n] = true
		s = append(s, t)
	}
	return s, nil
}

// Set is an ordered list of resolved tools: what one run may call.
type Set []Tool

// Names lists the set's tool names in order.
func (s Set) Names() []string {
	out := make([]string, len(s))
	for i, t := range s {
		out[i] = t.Name()
	}
	return out
}

// Get returns the tool named n in the set.
func (s Set) Get(n string) (Tool, bool) {
	for _, t := range s {
		if t.Name() == n {
			return t, true
		}
	}
	return nil, false
}

// AutonomousReader is a tool that is not on AutonomousTools by name (its
// name is not known when the binary is built: another MCP server's tool)
// and says whether it may still be given to an autonomous run. Only a tool
// that reads only may say yes (docs/ARCHITECTURE.md, "MCP").
type AutonomousReader interface {
	AutonomousReadOnly() bool
}

// ForMode applies the name gate: an autonomous run keeps only the tools on
// the autonomous allowlist, and the AutonomousReaders that read only. It
// returns the kept set and the names removed.
func (s Set) ForMode(m Mode) (Set, []string) {
	if m == ModeInteractive {
		return s, nil
	}
	var kept Set
	var removed []string
	for _, t := range s {
		if AutonomousTools[t.Name()] || autonomousReader(t) {
			kept = append(kept, t)
		} else {
			removed = append(removed, t.Name())
		}
	}
	return kept, removed
}

func autonomousReader(t Tool) bool {
	r, ok := t.(AutonomousReader)
	return ok && r.AutonomousReadOnly() && !t.Mutating()
}

// maxErrorChars bounds an error message shown to the model.
const maxErrorChars = 2000

// Outcome of one tool call, for metrics and the trace.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeDenied  = "denied"
	OutcomeUnknown = "unknown_tool"
	OutcomePanic   = "panic"
)

// Result is one tool call's outcome.
type Result struct {
	// Output is what the model sees: redacted, then truncated.
	Output  string
	Outcome string
	// Redacted counts the values redaction replaced in Output, by kind
	// (nil: none). The trace records it; the values are gone.
	Redacted redact.Counts
}

// Call runs the tool named name with args and never fails: every problem —
// an unknown name, bad arguments, a tool error, a gate refusal, a panic —
// comes back as text starting "ERROR:" with its outcome. Whatever the tool
// answered passes through redact.String before anything else sees it, then
// is truncated to maxChars (0 = no limit): this is the one place tool output
// leaves a tool (docs/MANUAL.md, "Redaction").
func (s Set) Call(ctx context.Context, name string, args json.RawMessage, maxChars int) Result {
	out, outcome, budget := s.call(ctx, name, args, maxChars)
	// What the tool redacted itself (a ConfigMap's values) counts too.
	n := redact.CountMarkers(out)
	red, more := redact.String(out)
	n.Merge(more)
	return Result{Output: Truncate(red, budget), Outcome: outcome, Redacted: n}
}

// call runs the tool and returns its raw answer, the outcome and the
// character budget that answer gets.
func (s Set) call(ctx context.Context, name string, args json.RawMessage, maxChars int) (out, outcome string, budget int) {
	t, ok := s.Get(name)
	if !ok {
		return fmt.Sprintf("ERROR: unknown tool %q; the tools you have are: %s", name, strings.Join(s.Names(), ", ")), OutcomeUnknown, 0
	}
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("ERROR: tool %s failed unexpectedly: %v", name, p)
			outcome, budget = OutcomePanic, maxErrorChars
		}
	}()
	res, err := t.Run(ctx, args)
	if err != nil {
		outcome = OutcomeError
		if errors.Is(err, ErrDenied) {
			outcome = OutcomeDenied
		}
		// An error is shown whole up to maxErrorChars whatever the output
		// budget: a cut error message helps nobody.
		return "ERROR: " + err.Error(), outcome, maxErrorChars
	}
	return res, OutcomeOK, maxChars
}

// Spec is a tool as /info and the model see it.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Mutating    bool            `json:"mutating"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Specs describes the set.
func (s Set) Specs() []Spec {
	out := make([]Spec, len(s))
	for i, t := range s {
		out[i] = Spec{Name: t.Name(), Description: t.Description(), Mutating: t.Mutating(), Parameters: t.Parameters()}
	}
	return out
}

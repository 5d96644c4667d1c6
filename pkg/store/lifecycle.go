package store

import (
	"context"
	"slices"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Finding lifecycle (docs/MANUAL.md, "Findings have a life"): a finding is
// identified by its cluster and key; it is open from the first sweep that
// sees it until a sweep that covered its object no longer does, then
// resolved; seen again, it reopens.
const (
	FindingOpen     = "open"
	FindingResolved = "resolved"
)

// What one observation did to one finding.
const (
	ChangeNew      = "new"      // first seen now
	ChangeOpen     = "open"     // seen again: still open since FirstSeen
	ChangeReopened = "reopened" // seen again after it was resolved
	ChangeResolved = "resolved" // open before, not seen by a sweep that covered it
)

// FindingState is the life of one finding.
type FindingState struct {
	Cluster    string
	Key        string
	Finding    api.Finding // as last seen
	Agent      string      // whose sweep saw or resolved it last
	RunID      string      // that sweep's run
	State      string      // open|resolved
	Reopened   int         // how often it came back after being resolved
	FirstSeen  time.Time
	LastSeen   time.Time
	ResolvedAt *time.Time
}

// ID is the state's identity: cluster and key.
func (s FindingState) ID() string { return s.Cluster + "/" + s.Key }

// Observation is what one sweep saw. Findings are every problem it found
// now in its scope; Complete says every check of that scope ran (no List
// forbidden, failed or timed out), so an open finding of the scope it did
// not see is resolved. An incomplete sweep resolves nothing.
type Observation struct {
	Cluster   string
	Agent     string
	RunID     string
	At        time.Time
	Namespace string // the scope: "" = every namespace and cluster-scoped objects
	Complete  bool
	Findings  []api.Finding
}

// FindingChange is one finding's change, with its state afterwards.
type FindingChange struct {
	Change string // new|open|reopened|resolved
	State  FindingState
}

// LifecycleFilter narrows ListFindingStates; empty fields match all.
type LifecycleFilter struct {
	State      string // open|resolved
	Cluster    string
	Namespace  string
	Kind       string
	Reason     string
	Agent      string
	Severities []string
	// FirstSeenSince and ResolvedSince keep states first seen / resolved
	// at or after the time (the digest's "new since yesterday").
	FirstSeenSince time.Time
	ResolvedSince  time.Time
}

func (f LifecycleFilter) match(s FindingState) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.State, s.State) && eq(f.Cluster, s.Cluster) && eq(f.Namespace, s.Finding.Namespace) &&
		eq(f.Kind, s.Finding.Kind) && eq(f.Reason, s.Finding.Reason) && eq(f.Agent, s.Agent) &&
		(len(f.Severities) == 0 || slices.Contains(f.Severities, s.Finding.Severity)) &&
		(f.FirstSeenSince.IsZero() || !s.FirstSeen.Before(ts(f.FirstSeenSince))) &&
		(f.ResolvedSince.IsZero() || (s.ResolvedAt != nil && !s.ResolvedAt.Before(ts(f.ResolvedSince))))
}

// Lifecycle keeps the findings' lives. ListFindingStates lists newest first
// by FirstSeen.
type Lifecycle interface {
	// ObserveFindings applies one sweep and returns what it changed: one
	// change per finding it saw, and one per finding it resolved.
	ObserveFindings(ctx context.Context, o Observation) ([]FindingChange, error)
	ListFindingStates(ctx context.Context, f LifecycleFilter, p Page) ([]FindingState, string, error)
}

func prepObservation(o Observation, now func() time.Time) (Observation, error) {
	for _, f := range []struct{ what, v string }{{"observation cluster", o.Cluster}, {"observation agent", o.Agent}} {
		if err := required(f.what, f.v); err != nil {
			return o, err
		}
	}
	if o.At.IsZero() {
		o.At = now()
	}
	o.At = ts(o.At)
	o.RunID, o.Namespace = clean(o.RunID), clean(o.Namespace)
	fs := make([]api.Finding, 0, len(o.Findings))
	seen := map[string]int{}
	for _, f := range o.Findings {
		f = cleanFinding(f)
		if f.Key == "" {
			f.Key = f.DeriveKey()
		}
		f.Cluster = o.Cluster
		if i, ok := seen[f.Key]; ok { // the last word on a key wins
			fs[i] = f
			continue
		}
		seen[f.Key] = len(fs)
		fs = append(fs, f)
	}
	o.Findings = fs
	return o, nil
}

// covers reports whether a complete observation of its scope saw the
// finding's object: a namespace sweep never covers another namespace or a
// cluster-scoped object.
func (o Observation) covers(s FindingState) bool {
	return o.Complete && s.Cluster == o.Cluster && (o.Namespace == "" || s.Finding.Namespace == o.Namespace)
}

// observe is the pure lifecycle step: prev holds the cluster's states the
// observation may change (those of its findings' keys and the open ones it
// covers), keyed by Key. It returns the changes in a stable order: the
// findings seen, as given, then the resolved ones by key.
func observe(prev map[string]FindingState, o Observation) []FindingChange {
	out := make([]FindingChange, 0, len(o.Findings))
	seen := map[string]bool{}
	for _, f := range o.Findings {
		seen[f.Key] = true
		s, ok := prev[f.Key]
		change := ChangeOpen
		switch {
		case !ok:
			change = ChangeNew
			s = FindingState{Cluster: o.Cluster, Key: f.Key, FirstSeen: o.At}
		case s.State == FindingResolved:
			change = ChangeReopened
			s.Reopened++
		}
		s.Finding, s.Agent, s.RunID, s.State, s.LastSeen, s.ResolvedAt = f, o.Agent, o.RunID, FindingOpen, o.At, nil
		out = append(out, FindingChange{Change: change, State: s})
	}
	keys := make([]string, 0, len(prev))
	for k := range prev {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := prev[k]
		if seen[k] || s.State != FindingOpen || !o.covers(s) {
			continue
		}
		at := o.At
		s.State, s.ResolvedAt, s.Agent, s.RunID = FindingResolved, &at, o.Agent, o.RunID
		out = append(out, FindingChange{Change: ChangeResolved, State: s})
	}
	return out
}

func validLifecycleFilter(f LifecycleFilter) error {
	if f.State != "" && f.State != FindingOpen && f.State != FindingResolved {
		return invalidf("state %q: want open or resolved", f.State)
	}
	for _, s := range f.Severities {
		if !api.ValidSeverity(s) {
			return invalidf("severity %q: want critical, high, medium or low", s)
		}
	}
	return nil
}

// stateCursorID is a state's id in a list cursor (a cluster name holds no
// NUL, so the two parts cannot run together).
func stateCursorID(s FindingState) string { return s.Cluster + "\x1f" + s.Key }

// ---- Switch ----

// ObserveFindings implements Lifecycle.
func (s *Switch) ObserveFindings(ctx context.Context, o Observation) ([]FindingChange, error) {
	o, err := prepObservation(o, s.o.now)
	if err != nil {
		return nil, err
	}
	return run(s, ctx, "observe findings", func(ctx context.Context, st fullStore) ([]FindingChange, error) {
		return st.ObserveFindings(ctx, o)
	}, nil)
}

// ListFindingStates implements Lifecycle.
func (s *Switch) ListFindingStates(ctx context.Context, f LifecycleFilter, p Page) ([]FindingState, string, error) {
	l, err := run(s, ctx, "list finding states", func(ctx context.Context, st fullStore) (listed[FindingState], error) {
		items, next, err := st.ListFindingStates(ctx, f, p)
		return listed[FindingState]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// ---- Memory ----

type lifeKey struct{ cluster, key string }

// ObserveFindings implements Lifecycle.
func (m *Memory) ObserveFindings(ctx context.Context, o Observation) ([]FindingChange, error) {
	o, err := prepObservation(o, m.now)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lives == nil {
		m.lives = map[lifeKey]FindingState{}
	}
	prev := map[string]FindingState{}
	for k, s := range m.lives {
		if k.cluster == o.Cluster {
			prev[k.key] = s
		}
	}
	changes := observe(prev, o)
	for _, c := range changes {
		m.lives[lifeKey{c.State.Cluster, c.State.Key}] = c.State
	}
	return changes, ctx.Err()
}

// ListFindingStates implements Lifecycle.
func (m *Memory) ListFindingStates(ctx context.Context, f LifecycleFilter, p Page) ([]FindingState, string, error) {
	if err := validLifecycleFilter(f); err != nil {
		return nil, "", err
	}
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []FindingState
	for _, s := range m.lives {
		if f.match(s) && c.after(s.FirstSeen, stateCursorID(s)) {
			all = append(all, s)
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(s FindingState) (time.Time, string) { return s.FirstSeen, stateCursorID(s) })
}

package store

import (
	"context"
	"testing"
	"time"
)

// contractActions: the kill switch row and the action history the budgets
// count.
func contractActions(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	st, err := s.ActionsState(ctx)
	mustNil(t, err)
	if st.Paused || !st.At.IsZero() {
		t.Fatalf("never set: want the zero state, got %+v", st)
	}
	mustNil(t, s.SetActionsState(ctx, ActionsState{Paused: true, Reason: "change freeze", By: "alice"}))
	st, err = s.ActionsState(ctx)
	mustNil(t, err)
	if !st.Paused || st.Reason != "change freeze" || st.By != "alice" || !st.At.Equal(ts(c.Now())) {
		t.Fatalf("state: %+v", st)
	}
	c.Advance(time.Minute)
	mustNil(t, s.SetActionsState(ctx, ActionsState{Paused: false, By: "bob"}))
	st, err = s.ActionsState(ctx)
	mustNil(t, err)
	if st.Paused || st.By != "bob" || st.Reason != "" {
		t.Fatalf("resumed: %+v", st)
	}

	base := c.Now()
	rec := func(id, name, outcome string, at time.Time) ActionRecord {
		return ActionRecord{ID: id, Agent: "k8s-engineer", Action: "gitops.pr.open", Namespace: "shop", Kind: "Deployment",
			Name: name, Container: "app", Outcome: outcome, Old: "256Mi", New: "384Mi", Change: "--- a/x\n+++ b/x\n", At: at}
	}
	mustNil(t, s.RecordAction(ctx, rec("a1", "cart", ActionDone, base.Add(-40*24*time.Hour))))
	mustNil(t, s.RecordAction(ctx, rec("a2", "cart", ActionDone, base.Add(-2*time.Hour))))
	mustNil(t, s.RecordAction(ctx, rec("a3", "cart", ActionRecommended, base.Add(-time.Hour))))
	mustNil(t, s.RecordAction(ctx, rec("a4", "web", ActionDone, base)))
	mustNil(t, s.RecordAction(ctx, rec("a2", "cart", ActionDone, base))) // retry: kept once
	mustIs(t, s.RecordAction(ctx, ActionRecord{Agent: "x", Action: "y", Outcome: "maybe"}), ErrInvalid)
	mustIs(t, s.RecordAction(ctx, ActionRecord{Action: "y", Outcome: ActionDone}), ErrInvalid)

	ids := func(f ActionFilter, limit int) []string {
		t.Helper()
		rs, err := s.ListActions(ctx, f, limit)
		mustNil(t, err)
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		f     ActionFilter
		limit int
		want  string
	}{
		{"all, newest first", ActionFilter{}, 0, "[a4 a3 a2 a1]"},
		{"one workload", ActionFilter{Name: "cart"}, 0, "[a3 a2 a1]"},
		{"done within 30 days", ActionFilter{Name: "cart", Outcome: ActionDone, Since: base.Add(-30 * 24 * time.Hour)}, 0, "[a2]"},
		{"limit", ActionFilter{}, 2, "[a4 a3]"},
		{"other namespace", ActionFilter{Namespace: "other"}, 0, "[]"},
	} {
		if got := fmtIDs(ids(tc.f, tc.limit)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
	rs, err := s.ListActions(ctx, ActionFilter{Name: "web"}, 1)
	mustNil(t, err)
	if r := rs[0]; r.Old != "256Mi" || r.New != "384Mi" || r.Change == "" || r.Agent != "k8s-engineer" || !r.At.Equal(ts(base)) {
		t.Fatalf("round trip: %+v", r)
	}
}

func fmtIDs(ids []string) string {
	out := "["
	for i, id := range ids {
		if i > 0 {
			out += " "
		}
		out += id
	}
	return out + "]"
}

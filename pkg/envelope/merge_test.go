package envelope_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// nsLabels is a cluster's namespaces as the envelope reads them.
type nsLabels map[string]map[string]string

func (l nsLabels) NamespaceLabels(_ context.Context, ns string) (map[string]string, error) {
	v, ok := l[ns]
	if !ok {
		return nil, errors.New("namespaces \"" + ns + "\" not found")
	}
	return v, nil
}

type followed struct {
	mu   sync.Mutex
	recs []store.ActionRecord
}

func (f *followed) Follow(r store.ActionRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, r)
}

func merge(ns, old, nv string) tools.Change {
	return tools.Change{Namespace: ns, Kind: "Deployment", Name: "cart", Container: "app", Old: old, New: nv,
		Change: "merge PR #7 (file:///repo#pull/7)\n--- a/apps/cart.yaml\n+++ b/apps/cart.yaml\n"}
}

// TestAMergeIsJudgedByItsWorkload: merge_if_trivial asks the envelope with
// the workload the diff changes, so a merge respects that namespace's
// opt-in and mode, counts against the workload's merge budget and ceiling,
// and a merge that was done is handed to the follow-up check.
func TestAMergeIsJudgedByItsWorkload(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)}
	st := store.NewMemory(clk.Now)
	f := &followed{}
	ns := nsLabels{"shop": {envelope.Label: "enabled"}, "lab": {envelope.Label: "propose"}, "legacy": {}}
	e := envelope.New(st, ns, envelope.Config{Agent: "code-reviewer", BumpsPer30Days: 3, MaxGrowth: 100, Follow: f, Now: clk.Now})
	ctx := context.Background()

	for _, tc := range []struct{ ns, want string }{
		{"legacy", "namespace legacy has not opted in"},
		{"kube-system", "system namespace"},
	} {
		if _, err := e.Permit(ctx, envelope.ActionMerge, merge(tc.ns, "32Mi", "48Mi")); !errors.Is(err, tools.ErrDenied) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge in %s: err = %v, want a refusal saying %q", tc.ns, err, tc.want)
		}
	}
	if v, err := e.Permit(ctx, envelope.ActionMerge, merge("lab", "32Mi", "48Mi")); err != nil || v.Act || !strings.HasPrefix(v.Answer, envelope.ProposedPrefix) {
		t.Errorf("merge in a propose namespace: %+v %v", v, err)
	}

	values := []string{"32Mi", "48Mi", "72Mi", "108Mi"}
	for i := range 3 {
		tgt := merge("shop", values[i], values[i+1])
		v, err := e.Permit(ctx, envelope.ActionMerge, tgt)
		if err != nil || !v.Act {
			t.Fatalf("merge %d: %+v %v", i+1, v, err)
		}
		e.Done(ctx, envelope.ActionMerge, tgt)
		clk.Advance(8 * 24 * time.Hour)
	}
	v, err := e.Permit(ctx, envelope.ActionMerge, merge("shop", "108Mi", "162Mi"))
	if err != nil || v.Act || !strings.HasPrefix(v.Answer, envelope.RecommendedPrefix) ||
		!strings.Contains(v.Answer, "already had 3 memory bumps merged in the last 720h0m0s (at most 3)") {
		t.Fatalf("fourth merge: %+v %v", v, err)
	}
	if len(f.recs) != 3 || f.recs[0].ID == "" || f.recs[0].Namespace != "shop" || f.recs[0].Action != "gitops.pr.mergetrivial" ||
		f.recs[2].New != "108Mi" || f.recs[0].Outcome != store.ActionDone {
		t.Fatalf("followed: %+v", f.recs)
	}
	stored, _ := st.ListActions(ctx, store.ActionFilter{Outcome: store.ActionDone}, 0)
	if len(stored) != 3 || stored[2].ID != f.recs[0].ID {
		t.Fatalf("the followed record is the stored one: %+v vs %+v", stored, f.recs)
	}

	// The ceiling reads opened and merged bumps alike.
	e2 := envelope.New(store.NewMemory(clk.Now), ns, envelope.Config{Agent: "k8s-engineer", BumpsPer30Days: 10, MaxGrowth: 2, Now: clk.Now})
	e2.Done(ctx, envelope.ActionBump, merge("shop", "32Mi", "48Mi"))
	if v, _ := e2.Permit(ctx, envelope.ActionMerge, merge("shop", "48Mi", "72Mi")); !strings.Contains(v.Answer, "ceiling: 72Mi would be above 2× the first limit seen for this container (32Mi)") {
		t.Fatalf("ceiling at merge: %+v", v)
	}
}

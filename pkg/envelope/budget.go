package envelope

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Budget windows.
const (
	RestartWindow = time.Hour
	BumpWindow    = 30 * 24 * time.Hour
)

// overBudget says whether the change would exceed a budget, why, and the
// history that counts. A history that cannot be read is over budget: the
// envelope fails closed.
func (e *Envelope) overBudget(ctx context.Context, a tools.Action, t tools.Change) (string, []store.ActionRecord, bool) {
	var perWorkload, fleet int
	var window time.Duration
	switch a {
	case ActionRestart:
		perWorkload, fleet, window = e.cfg.RestartsPerHour, e.cfg.FleetRestartsPerHour, RestartWindow
	case ActionBump, ActionMerge:
		// Opened and merged bumps are counted apart: at most N PRs per
		// workload, and at most N of them merged into production.
		perWorkload, fleet, window = e.cfg.BumpsPer30Days, e.cfg.FleetBumpsPer30Days, BumpWindow
	default:
		return "", nil, false
	}
	since := e.cfg.Now().Add(-window)
	mine, err := e.st.ListActions(ctx, store.ActionFilter{Action: string(a), Namespace: t.Namespace, Kind: t.Kind, Name: t.Name,
		Outcome: store.ActionDone, Since: since}, store.MaxLimit)
	if err != nil {
		return fmt.Sprintf("the action history could not be read (%v), so the budget cannot be checked", err), nil, true
	}
	if len(mine) >= perWorkload {
		return fmt.Sprintf("budget: %s/%s/%s already had %d %s in the last %s (at most %d)", t.Namespace, t.Kind, t.Name,
			len(mine), what(a), window, perWorkload), mine, true
	}
	all, err := e.st.ListActions(ctx, store.ActionFilter{Action: string(a), Outcome: store.ActionDone, Since: since}, store.MaxLimit)
	if err != nil {
		return fmt.Sprintf("the action history could not be read (%v), so the budget cannot be checked", err), nil, true
	}
	if len(all) >= fleet {
		return fmt.Sprintf("fleet budget: %d %s across the fleet in the last %s (at most %d)", len(all), what(a), window, fleet), all, true
	}
	if a == ActionBump || a == ActionMerge {
		return e.ceiling(ctx, t)
	}
	return "", nil, false
}

// ceiling refuses a memory limit above MaxGrowth × the first value seen
// for the container: a leak is not fixed by more memory forever.
func (e *Envelope) ceiling(ctx context.Context, t tools.Change) (string, []store.ActionRecord, bool) {
	all, err := e.st.ListActions(ctx, store.ActionFilter{Namespace: t.Namespace, Kind: t.Kind,
		Name: t.Name, Container: t.Container}, store.MaxLimit)
	if err != nil {
		return fmt.Sprintf("the action history could not be read (%v), so the ceiling cannot be checked", err), nil, true
	}
	var hist []store.ActionRecord
	first := t.Old
	for _, r := range all { // newest first: the last with a value is the first seen
		if r.Action != string(ActionBump) && r.Action != string(ActionMerge) {
			continue
		}
		hist = append(hist, r)
		if r.Old != "" {
			first = r.Old
		}
	}
	fq, err1 := resource.ParseQuantity(first)
	nq, err2 := resource.ParseQuantity(t.New)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("the ceiling cannot be checked: %q or %q is not a quantity", first, t.New), hist, true
	}
	if limit := float64(fq.Value()) * e.cfg.MaxGrowth; float64(nq.Value()) > limit {
		return fmt.Sprintf("ceiling: %s would be above %g× the first limit seen for this container (%s)", t.New, e.cfg.MaxGrowth, first), hist, true
	}
	return "", nil, false
}

func what(a tools.Action) string {
	switch a {
	case ActionRestart:
		return "restarts"
	case ActionMerge:
		return "memory bumps merged"
	}
	return "memory-bump PRs opened"
}

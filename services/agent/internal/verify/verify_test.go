package verify_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/pager/pagertest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/verify"
)

// workload is a scripted cluster: one workload whose state the test sets.
type workload struct {
	mu        sync.Mutex
	rolledOut bool
	available bool
	gone      bool
	limit     string
	kills     []time.Time
	reads     int
}

func (w *workload) WorkloadHealth(_ context.Context, _, _, _, _ string, since time.Time) (kube.Health, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads++
	h := kube.Health{Gone: w.gone, RolledOut: w.rolledOut, Available: w.available, MemoryLimit: w.limit, Replicas: 1}
	if w.available {
		h.Ready = 1
	}
	for _, k := range w.kills {
		if k.After(since) {
			h.OOMKills = append(h.OOMKills, "pod web-1 container app OOMKilled at "+k.UTC().Format(time.RFC3339Nano))
			h.LastOOM = k
		}
	}
	return h, nil
}

func (w *workload) set(f func(w *workload)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w)
}

type rig struct {
	pd  *pagertest.PagerDuty
	st  *store.Memory
	v   *verify.Verifier
	wl  *workload
	rec store.ActionRecord
}

func newRig(t *testing.T, wl *workload, action string) *rig {
	t.Helper()
	pd := pagertest.NewPagerDuty(t)
	p, err := pager.New(pager.Config{Target: "pagerduty", Key: pd.RoutingKey, URL: pd.URL})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory(nil)
	ctx, cancel := context.WithCancel(context.Background())
	v := verify.New(ctx, wl, st, pager.NewEscalator(p, st, nil, nil), verify.Config{Agent: "code-reviewer",
		SyncTimeout: 300 * time.Millisecond, Window: 150 * time.Millisecond, Interval: 10 * time.Millisecond, Watch: 20 * time.Second,
		LinkBase: "https://kubecrew.example.com/agents/code-reviewer/"})
	t.Cleanup(func() { cancel(); v.Wait() })
	rec := store.ActionRecord{ID: "a1", Agent: "code-reviewer", RunID: "run-9", Action: action, Namespace: "shop", Kind: "Deployment",
		Name: "web", Container: "app", Outcome: store.ActionDone, Old: "256Mi", New: "384Mi", At: time.Now()}
	return &rig{pd: pd, st: st, v: v, wl: wl, rec: rec}
}

// checks polls the store until pred holds for the action's checks.
func (r *rig) checks(t *testing.T, what string, pred func([]store.ActionCheck) bool) []store.ActionCheck {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cs, err := r.st.ListChecks(context.Background(), store.CheckFilter{ActionID: r.rec.ID}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if pred(cs) {
			return cs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: checks %+v, PagerDuty events %+v", what, cs, r.pd.Events())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAFixThatDidNotStopTheOOMKillsPagesOnceAndResolvesOnce: the merged
// bump is live, the container is OOM-killed again: not fixed, one trigger
// with the evidence and the report link; many watch passes later the kills
// stop for a whole window: one resolve, and the recovery is recorded.
func TestAFixThatDidNotStopTheOOMKillsPagesOnceAndResolvesOnce(t *testing.T) {
	wl := &workload{rolledOut: true, available: false, limit: "384Mi"}
	r := newRig(t, wl, verify.ActionMerge)
	stopKills := make(chan struct{})
	go func() { // the container keeps being OOM-killed until the test stops it
		for {
			select {
			case <-stopKills:
				return
			case <-time.After(20 * time.Millisecond):
				wl.set(func(w *workload) { w.kills = append(w.kills, time.Now()) })
			}
		}
	}()
	r.v.Follow(r.rec)
	cs := r.checks(t, "not fixed", func(cs []store.ActionCheck) bool { return len(cs) >= 1 })
	c := cs[0]
	if c.Status != store.CheckNotFixed || c.Paged != pager.Triggered || c.PageKey != "kubecrew/shop-deployment-web-app" ||
		!strings.Contains(c.Detail, "OOM kill(s) since the change was live") || !strings.Contains(c.Detail, "not available: 0/1") {
		t.Fatalf("first check: %+v", c)
	}
	ev := r.pd.Events()
	if len(ev) != 1 || ev[0].Action != "trigger" || ev[0].DedupKey != c.PageKey || ev[0].Payload.Severity != "critical" ||
		ev[0].Payload.Source != "shop/Deployment/web" || ev[0].Links[0].Href != "https://kubecrew.example.com/agents/code-reviewer/runs/run-9/report" ||
		!strings.Contains(ev[0].Payload.Summary, "the merged memory bump (256Mi → 384Mi) did not fix shop/Deployment/web") ||
		ev[0].Payload.Details["oom_kill_1"] == "" || ev[0].Payload.Details["action_id"] != "a1" {
		t.Fatalf("trigger: %+v payload %+v", ev, ev[0].Payload)
	}
	// Watch passes go on while the kills go on: no second page.
	reads := func() int { wl.mu.Lock(); defer wl.mu.Unlock(); return wl.reads }
	for n := reads(); reads() < n+20; {
		time.Sleep(5 * time.Millisecond)
	}
	close(stopKills)
	wl.set(func(w *workload) { w.available = true })
	cs = r.checks(t, "recovered", func(cs []store.ActionCheck) bool { return len(cs) == 2 })
	if cs[0].Status != store.CheckFixed || cs[0].Paged != pager.Resolved || !strings.HasPrefix(cs[0].Detail, "recovered: no OOM kill for ") {
		t.Fatalf("recovery check: %+v", cs[0])
	}
	r.v.Wait()
	if tr, rs := r.pd.Count("trigger", c.PageKey), r.pd.Count("resolve", c.PageKey); tr != 1 || rs != 1 || len(r.pd.Rejected()) != 0 {
		t.Fatalf("triggers %d, resolves %d, rejected %v; want 1 and 1", tr, rs, r.pd.Rejected())
	}
}

func TestAFixThatWorkedPagesNobody(t *testing.T) {
	wl := &workload{rolledOut: true, available: true, limit: "384Mi", kills: []time.Time{time.Now().Add(-time.Hour)}}
	r := newRig(t, wl, verify.ActionRestart)
	r.v.Follow(r.rec)
	cs := r.checks(t, "fixed", func(cs []store.ActionCheck) bool { return len(cs) == 1 })
	if cs[0].Status != store.CheckFixed || cs[0].Paged != "" || !strings.Contains(cs[0].Detail, "1/1 replicas available") {
		t.Fatalf("check: %+v", cs[0])
	}
	r.v.Wait()
	if n := len(r.pd.Events()); n != 0 {
		t.Fatalf("%d events sent for a fix that worked", n)
	}
}

// TestAMergeNeverAppliedPages: the GitOps controller never applies the
// merged limit within the sync timeout: the check says so and pages.
func TestAMergeNeverAppliedPages(t *testing.T) {
	wl := &workload{rolledOut: true, available: true, limit: "256Mi"}
	r := newRig(t, wl, verify.ActionMerge)
	r.v.Follow(r.rec)
	cs := r.checks(t, "not applied", func(cs []store.ActionCheck) bool { return len(cs) >= 1 })
	if cs[len(cs)-1].Status != store.CheckNotFixed || !strings.Contains(cs[len(cs)-1].Detail, "the merged limit 384Mi is not live") ||
		!strings.Contains(cs[len(cs)-1].Detail, "the live spec says 256Mi") || cs[len(cs)-1].Paged != pager.Triggered {
		t.Fatalf("check: %+v", cs)
	}
}

func TestOnlyDoneProductionChangesAreFollowed(t *testing.T) {
	wl := &workload{gone: true}
	r := newRig(t, wl, "gitops.pr.open")
	r.v.Follow(r.rec) // a PR opening changes nothing in production
	rec := r.rec
	rec.Action, rec.Outcome = verify.ActionRestart, store.ActionProposed
	r.v.Follow(rec) // a proposal changed nothing
	r.v.Wait()
	if wl.reads != 0 {
		t.Fatalf("the cluster was read %d times for actions that changed nothing", wl.reads)
	}
	rec.Outcome = store.ActionDone
	r.v.Follow(rec)
	r.v.Wait()
	cs, _ := r.st.ListChecks(context.Background(), store.CheckFilter{}, 0)
	if len(cs) != 1 || cs[0].Status != store.CheckUnknown || !strings.Contains(cs[0].Detail, "gone") {
		t.Fatalf("a gone workload: %+v", cs)
	}
}

package envelope_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cluster makes namespace ns (with labels) holding Deployment "web" on the
// shared test API server.
func cluster(t *testing.T, labels map[string]string) (kubernetes.Interface, string) {
	t.Helper()
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-env-%d", rand.IntN(1_000_000_000))
	ctx := context.Background()
	cs := env.Clientset
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Deployment goes first: without a controller-manager a deleted
	// namespace keeps its objects, and other packages sweep this cluster.
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{})
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// its pod predates a ConfigMap write: a restart the cluster justifies
	if _, err := kubetest.CreateRestartable(ctx, cs, ns, "web", nil); err != nil {
		t.Fatal(err)
	}
	return cs, ns
}

// rig is an envelope over a memory store, judging a kube client.
type rig struct {
	st    *store.Memory
	env   *envelope.Envelope
	kc    *kube.Client
	cs    kubernetes.Interface
	clk   *clock
	trace []map[string]any
	mu    sync.Mutex
}

func newRig(t *testing.T, cs kubernetes.Interface, cfg envelope.Config) *rig {
	r := &rig{cs: cs, clk: &clock{t: time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)}}
	r.st = store.NewMemory(r.clk.Now)
	r.kc = kube.New(cs)
	cfg.Agent, cfg.Now = "k8s-engineer", r.clk.Now
	r.env = envelope.New(r.st, r.kc, cfg)
	r.kc.SetEnvelope(r.env)
	return r
}

// ctx is an autonomous run's context that records the run's trace.
func (r *rig) ctx() context.Context {
	return tools.WithRunInfo(context.Background(), tools.RunInfo{ID: "run-1", Trace: func(typ string, data map[string]any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		data["type"] = typ
		r.trace = append(r.trace, data)
	}})
}

func (r *rig) restartedAt(t *testing.T, ns string) string {
	t.Helper()
	d, err := r.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations[kube.RestartAnnotation]
}

func restart(ns string) kube.RolloutArgs {
	return kube.RolloutArgs{Action: kube.RolloutRestart, Kind: kube.KindDeployments, Namespace: ns, Name: "web"}
}

func outcomes(t *testing.T, st *store.Memory) string {
	t.Helper()
	rs, err := st.ListActions(context.Background(), store.ActionFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(rs) - 1; i >= 0; i-- {
		out = append(out, rs[i].Outcome)
	}
	return strings.Join(out, ",")
}

// TestKillSwitchStopsAPlannedRestart: Sol has decided to restart (the plan
// is made, the arguments are ready); an operator pauses the fleet; the
// restart the plan then executes is refused on the wire — the Deployment
// is not patched — with who paused, when and why. Resumed, the same plan
// goes through.
func TestKillSwitchStopsAPlannedRestart(t *testing.T) {
	cs, ns := cluster(t, map[string]string{envelope.Label: "enabled"})
	r := newRig(t, cs, envelope.Config{})
	planned := restart(ns)

	if err := r.st.SetActionsState(context.Background(), store.ActionsState{Paused: true, By: "alice", Reason: "change freeze for the release"}); err != nil {
		t.Fatal(err)
	}
	_, err := r.kc.Rollout(r.ctx(), planned)
	if !errors.Is(err, tools.ErrDenied) {
		t.Fatalf("paused restart: err = %v, want a gate refusal", err)
	}
	for _, want := range []string{"paused by alice at 2026-03-04T10:00:00Z: change freeze for the release", "read-only"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if got := r.restartedAt(t, ns); got != "" {
		t.Fatalf("the paused restart reached the API server (restartedAt=%s)", got)
	}
	if len(r.trace) != 1 || r.trace[0]["type"] != "envelope" || r.trace[0]["decision"] != "refuse" {
		t.Errorf("trace = %v", r.trace)
	}
	if _, err := r.kc.Rollout(r.ctx(), kube.RolloutArgs{Action: kube.RolloutStatus, Kind: kube.KindDeployments, Namespace: ns, Name: "web"}); err != nil {
		t.Errorf("reads go on while paused: %v", err)
	}

	if err := r.st.SetActionsState(context.Background(), store.ActionsState{Paused: false, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	out, err := r.kc.Rollout(r.ctx(), planned)
	if err != nil || !strings.HasPrefix(out, "restarted") {
		t.Fatalf("resumed restart: %q, %v", out, err)
	}
	if r.restartedAt(t, ns) == "" {
		t.Fatal("the resumed restart did not reach the API server")
	}
	if got := outcomes(t, r.st); got != "refused,done" {
		t.Errorf("recorded outcomes = %s, want refused,done", got)
	}
}

// TestWhereItMayAct: only namespaces that opted in, never a system
// namespace or the fleet's own; the refusal says how to opt in.
func TestWhereItMayAct(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		allow  bool // in ACTIONS_NAMESPACES
		fleet  bool // the fleet's own namespace
		mode   string
		want   string // "restarted", "PROPOSED" or the refusal's words
	}{
		{name: "label enabled", labels: map[string]string{envelope.Label: "enabled"}, want: "restarted"},
		{name: "label act", labels: map[string]string{envelope.Label: "act"}, mode: envelope.ModePropose, want: "restarted"},
		{name: "no label", want: "has not opted in (label it kubecrew.io/actions=enabled"},
		{name: "allowlisted", allow: true, want: "restarted"},
		{name: "label with a typo", labels: map[string]string{envelope.Label: "yes"}, want: `kubecrew.io/actions="yes" is not act, propose or enabled`},
		{name: "fleet namespace, even labelled", labels: map[string]string{envelope.Label: "act"}, fleet: true, want: "the fleet's own; kubecrew never acts there"},
		{name: "label propose", labels: map[string]string{envelope.Label: "propose"}, want: "PROPOSED"},
		{name: "enabled follows ACTIONS_MODE=propose", labels: map[string]string{envelope.Label: "enabled"}, mode: envelope.ModePropose, want: "PROPOSED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, ns := cluster(t, tc.labels)
			cfg := envelope.Config{Mode: tc.mode}
			if tc.allow {
				cfg.Allow = []string{"other", ns}
			}
			if tc.fleet {
				cfg.FleetNamespace = ns
			}
			r := newRig(t, cs, cfg)
			out, err := r.kc.Rollout(r.ctx(), restart(ns))
			got := out
			if err != nil {
				got = err.Error()
				if !errors.Is(err, tools.ErrDenied) {
					t.Errorf("refusal is not a gate denial: %v", err)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if changed := r.restartedAt(t, ns) != ""; changed != (tc.want == "restarted") {
				t.Errorf("deployment changed = %v", changed)
			}
			if len(r.trace) != 1 || r.trace[0]["type"] != "envelope" {
				t.Errorf("the decision is not in the trace: %v", r.trace)
			}
		})
	}
	t.Run("system namespaces", func(t *testing.T) {
		r := newRig(t, kubetest.Start(t).Clientset, envelope.Config{Allow: envelope.SystemNamespaces})
		for _, ns := range envelope.SystemNamespaces {
			_, err := r.env.Permit(r.ctx(), envelope.ActionRestart, tools.Change{Namespace: ns, Kind: "deployments", Name: "coredns"})
			if err == nil || !strings.Contains(err.Error(), "system namespace") {
				t.Errorf("%s: %v", ns, err)
			}
		}
	})
}

// TestRestartBudget: at most N restarts of one workload per hour; over it
// the restart becomes a recommendation with the history, and the hour
// after it is allowed again.
func TestRestartBudget(t *testing.T) {
	cs, ns := cluster(t, map[string]string{envelope.Label: "enabled"})
	r := newRig(t, cs, envelope.Config{RestartsPerHour: 2})
	for i := range 2 {
		if out, err := r.kc.Rollout(r.ctx(), restart(ns)); err != nil || !strings.HasPrefix(out, "restarted") {
			t.Fatalf("restart %d: %q %v", i+1, out, err)
		}
		r.clk.Advance(10 * time.Minute)
	}
	before := r.restartedAt(t, ns)
	out, err := r.kc.Rollout(r.ctx(), restart(ns))
	if err != nil || !strings.HasPrefix(out, "RECOMMENDED FOR A HUMAN, NOT DONE") || !strings.Contains(out, "already had 2 restarts in the last 1h0m0s (at most 2)") ||
		strings.Count(out, "Z k8s.rollout.restart "+ns+"/deployments/web\n") != 2 {
		t.Fatalf("third restart: %q %v", out, err)
	}
	if r.restartedAt(t, ns) != before {
		t.Fatal("the recommended restart was made")
	}
	r.clk.Advance(time.Hour)
	if out, err := r.kc.Rollout(r.ctx(), restart(ns)); err != nil || !strings.HasPrefix(out, "restarted") {
		t.Fatalf("an hour later: %q %v", out, err)
	}
	if got := outcomes(t, r.st); got != "done,done,recommended,done" {
		t.Errorf("outcomes = %s", got)
	}
}

// gitopsRig is a memory-bump service over a local forge, with the envelope.
func gitopsRig(t *testing.T, cfg envelope.Config, ns string, cs kubernetes.Interface) (*gitops.Service, *gitops.Local, string, *rig) {
	t.Helper()
	manifests, err := os.ReadFile(filepath.Join("..", "..", "hack", "fixtures", "broken-workloads.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "gitops")
	if err := gitops.InitLocalRepo(repo, map[string][]byte{"apps/fixtures/broken-workloads.yaml": manifests}); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, cs, cfg)
	forge, err := gitops.NewLocal(repo, "main", gitops.WithLocalClock(r.clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	svc := gitops.NewService(forge, "k8s-engineer", gitops.Options{Now: r.clk.Now, Envelope: r.env})
	return svc, forge, repo, r
}

func refs(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "for-each-ref", "--format=%(refname) %(objectname)").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v %s", err, out)
	}
	return string(out)
}

func bump(ns string) gitops.BumpRequest {
	return gitops.BumpRequest{Namespace: ns, Kind: "Deployment", Name: "oomkill", Container: "app", Reason: "OOMKilled 12 times in 1h"}
}

// TestBudgetTurnsTheFourthBumpIntoARecommendation: three memory bumps of
// one workload in 30 days are merged; the fourth opens no PR (the forge's
// refs are unchanged) and is recorded as a recommendation for a human with
// the three before it.
func TestBudgetTurnsTheFourthBumpIntoARecommendation(t *testing.T) {
	cs, ns := cluster(t, map[string]string{envelope.Label: "enabled"})
	svc, forge, repo, r := gitopsRig(t, envelope.Config{MaxGrowth: 100}, ns, cs)
	ctx := r.ctx()
	for i := range 3 {
		res, err := svc.ProposeMemoryBump(ctx, bump(ns))
		if err != nil || res.NotMade != "" || res.PR.Number == 0 {
			t.Fatalf("bump %d: %+v %v", i+1, res, err)
		}
		if err := forge.Merge(ctx, res.PR.Number, "merge"); err != nil {
			t.Fatal(err)
		}
		r.clk.Advance(8 * 24 * time.Hour) // past the settle window
	}
	before := refs(t, repo)
	res, err := svc.ProposeMemoryBump(ctx, bump(ns))
	if err != nil {
		t.Fatal(err)
	}
	if res.PR.Number != 0 || !strings.HasPrefix(res.NotMade, "RECOMMENDED FOR A HUMAN, NOT DONE") ||
		!strings.Contains(res.NotMade, "already had 3 memory-bump PRs opened in the last 720h0m0s (at most 3)") {
		t.Fatalf("fourth bump: %+v", res)
	}
	for _, v := range []string{"32Mi -> 48Mi", "48Mi -> 72Mi", "72Mi -> 108Mi", "+              memory: 162Mi"} {
		if !strings.Contains(res.NotMade, v) {
			t.Errorf("the recommendation lacks %q (history and the change):\n%s", v, res.NotMade)
		}
	}
	if after := refs(t, repo); after != before {
		t.Fatalf("the forge changed:\n%s\n->\n%s", before, after)
	}
	recs, err := r.st.ListActions(ctx, store.ActionFilter{Outcome: store.ActionRecommended}, 0)
	if err != nil || len(recs) != 1 || recs[0].New != "162Mi" || recs[0].RunID != "run-1" {
		t.Fatalf("recommendation record: %+v %v", recs, err)
	}
}

// TestCeilingOverTheFirstLimitSeen: a limit never goes above MaxGrowth ×
// the first value seen, whatever the per-workload budget allows.
func TestCeilingOverTheFirstLimitSeen(t *testing.T) {
	cs, ns := cluster(t, map[string]string{envelope.Label: "enabled"})
	svc, forge, repo, r := gitopsRig(t, envelope.Config{BumpsPer30Days: 10, MaxGrowth: 4}, ns, cs)
	ctx := r.ctx()
	req := bump(ns)
	req.Factor = 2
	for _, want := range []string{"64Mi", "128Mi"} {
		res, err := svc.ProposeMemoryBump(ctx, req)
		if err != nil || res.New != want || res.NotMade != "" {
			t.Fatalf("bump to %s: %+v %v", want, res, err)
		}
		if err := forge.Merge(ctx, res.PR.Number, "merge"); err != nil {
			t.Fatal(err)
		}
		r.clk.Advance(25 * time.Hour)
	}
	before := refs(t, repo)
	res, err := svc.ProposeMemoryBump(ctx, req)
	if err != nil || !strings.Contains(res.NotMade, "ceiling: 256Mi would be above 4× the first limit seen for this container (32Mi)") {
		t.Fatalf("third bump: %+v %v", res, err)
	}
	if refs(t, repo) != before {
		t.Fatal("the forge changed")
	}
}

// TestProposeChangesNothing: in propose mode the restart and the PR are
// prepared exactly and recorded; the Deployment's resourceVersion and the
// forge's refs are unchanged.
func TestProposeChangesNothing(t *testing.T) {
	cs, ns := cluster(t, map[string]string{envelope.Label: "propose"})
	svc, _, repo, r := gitopsRig(t, envelope.Config{}, ns, cs)
	ctx := r.ctx()
	d0, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs0 := refs(t, repo)

	out, err := r.kc.Rollout(ctx, restart(ns))
	if err != nil || !strings.HasPrefix(out, "PROPOSED, NOT DONE") || !strings.Contains(out, "kubectl patch deployments web -n "+ns+" --type=strategic") {
		t.Fatalf("restart: %q %v", out, err)
	}
	res, err := svc.ProposeMemoryBump(ctx, bump(ns))
	if err != nil || res.PR.Number != 0 || !strings.Contains(res.NotMade, "-              memory: 32Mi\n+              memory: 48Mi\n") {
		t.Fatalf("bump: %+v %v", res, err)
	}
	d1, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d1.ResourceVersion != d0.ResourceVersion {
		t.Errorf("the Deployment changed: resourceVersion %s -> %s", d0.ResourceVersion, d1.ResourceVersion)
	}
	if refs(t, repo) != refs0 {
		t.Error("the forge's refs changed")
	}
	props, err := r.st.ListActions(ctx, store.ActionFilter{Outcome: store.ActionProposed}, 0)
	if err != nil || len(props) != 2 || props[0].Action != "gitops.pr.open" || props[1].Action != "k8s.rollout.restart" ||
		!strings.HasPrefix(props[0].Change, "--- a/apps/fixtures/broken-workloads.yaml\n+++ b/apps/fixtures/broken-workloads.yaml\n@@ ") {
		t.Fatalf("proposals: %+v %v", props, err)
	}
}

package pulse_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/pulse/lease"
	"github.com/kubecrew/kubecrew/pkg/store"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

var _ pulse.Leader = (*lease.Lease)(nil)

// Short timings so takeovers happen within a second or two.
const (
	testLeaseDuration = 2 * time.Second
	testRenewDeadline = time.Second
	testRetryPeriod   = 250 * time.Millisecond
)

func TestNewLeaseRejectsBadOptions(t *testing.T) {
	t.Parallel()
	good := lease.Options{Client: fake.NewClientset(), Namespace: "kubecrew", Name: lease.Name("platform-sre"), Identity: "agent-platform-sre-abc"}
	if l, err := lease.New(good); err != nil {
		t.Fatal(err)
	} else if got := l.String(); got != "lease kubecrew/kubecrew-pulse-platform-sre" {
		t.Errorf("String() = %q", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*lease.Options)
		want string
	}{
		{"no client", func(o *lease.Options) { o.Client = nil }, "kube client"},
		{"no identity", func(o *lease.Options) { o.Identity = "" }, "identity"},
		{"no namespace", func(o *lease.Options) { o.Namespace = "" }, "namespace"},
		{"bad namespace", func(o *lease.Options) { o.Namespace = "Kube_Crew" }, "namespace"},
		{"bad name", func(o *lease.Options) { o.Name = "kubecrew pulse" }, "name"},
		{"renew deadline not under the lease", func(o *lease.Options) { o.RenewDeadline = 40 * time.Second }, "renewDeadline"},
		{"retry period not under the deadline", func(o *lease.Options) { o.RetryPeriod = 19 * time.Second }, "retryPeriod"},
		{"fractional lease", func(o *lease.Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 1500*time.Millisecond, time.Second, 100*time.Millisecond
		}, "whole seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			_, err := lease.New(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLeaseWithoutRunNeverLeads(t *testing.T) {
	t.Parallel()
	l, err := lease.New(lease.Options{Client: fake.NewClientset(), Namespace: "kubecrew", Name: "x", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Lead(context.Background()); ok || err != nil {
		t.Errorf("Lead before Run = %v, %v; want false", ok, err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Run(context.Background()); err == nil {
		t.Error("Run after Release started")
	}
}

// candidate is one replica's Lease, running until stopped.
type candidate struct {
	id     string
	lease  *lease.Lease
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *candidate) leads(t *testing.T) bool {
	t.Helper()
	ok, err := c.lease.Lead(context.Background())
	if err != nil {
		t.Fatalf("%s: Lead: %v", c.id, err)
	}
	return ok
}

// stop cancels Run's context (release on cancel) and waits for Run to end.
func (c *candidate) stop() { c.cancel(); <-c.done }

// newLeaseName returns a fresh Lease name in default, deleted at cleanup.
func newLeaseName(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := lease.Name("test-" + hex.EncodeToString(b))
	t.Cleanup(func() {
		_ = cs.CoordinationV1().Leases("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func newCandidate(t *testing.T, cs kubernetes.Interface, name, id string) *candidate {
	t.Helper()
	l, err := lease.New(lease.Options{
		Client: cs, Namespace: "default", Name: name, Identity: id,
		LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{id: id, lease: l, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := l.Run(ctx); err != nil {
			t.Errorf("%s: Run: %v", id, err)
		}
	}()
	t.Cleanup(c.stop)
	return c
}

// eventually polls cond (the API server is real: leadership changes on its
// own schedule) until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %s", what, within)
		}
	}
	return time.Since(start)
}

// exactlyOne returns the one candidate leading, or nil.
func exactlyOne(t *testing.T, cs ...*candidate) *candidate {
	t.Helper()
	var leader *candidate
	for _, c := range cs {
		if c.leads(t) {
			if leader != nil {
				t.Fatalf("both %s and %s lead", leader.id, c.id)
			}
			leader = c
		}
	}
	return leader
}

func holder(t *testing.T, cs kubernetes.Interface, name string) (string, time.Time) {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease %s: %v", name, err)
	}
	var renew time.Time
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.Time
	}
	if l.Spec.HolderIdentity == nil {
		return "", renew
	}
	return *l.Spec.HolderIdentity, renew
}

func TestLeaseTwoCandidatesOneLeader(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	name := newLeaseName(t, env.Clientset)
	a := newCandidate(t, env.Clientset, name, "pod-a")
	b := newCandidate(t, env.Clientset, name, "pod-b")
	var leader *candidate
	took := eventually(t, 10*time.Second, "a leader", func() bool { leader = exactlyOne(t, a, b); return leader != nil })
	t.Logf("%s leads after %s", leader.id, took.Round(time.Millisecond))
	id, first := holder(t, env.Clientset, name)
	if id != leader.id {
		t.Fatalf("the Lease names %q, %s leads", id, leader.id)
	}
	// Through several renewals (well past a LeaseDuration), leadership stays put.
	renewals := 0
	last := first
	eventually(t, 10*time.Second, "the leader renewing past a lease duration", func() bool {
		if l := exactlyOne(t, a, b); l != leader {
			t.Fatalf("leadership moved while the leader renews (now %v)", l)
		}
		id, r := holder(t, env.Clientset, name)
		if id != leader.id {
			t.Fatalf("the Lease names %q, %s leads", id, leader.id)
		}
		if r.After(last) {
			renewals++
			last = r
		}
		return renewals >= 3 && last.Sub(first) > testLeaseDuration
	})
}

func TestLeaseReleaseOnCancelHandsOver(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	name := newLeaseName(t, env.Clientset)
	a := newCandidate(t, env.Clientset, name, "pod-a")
	b := newCandidate(t, env.Clientset, name, "pod-b")
	var leader *candidate
	eventually(t, 10*time.Second, "a leader", func() bool { leader = exactlyOne(t, a, b); return leader != nil })
	other := b
	if leader == b {
		other = a
	}
	start := time.Now()
	leader.stop() // the leader's context ends: it releases the Lease
	if leader.leads(t) {
		t.Fatal("the stopped candidate still leads")
	}
	if id, _ := holder(t, env.Clientset, name); id != "" && id != other.id {
		t.Fatalf("after release the Lease names %q", id)
	}
	eventually(t, 5*time.Second, "takeover", func() bool { return exactlyOne(t, a, b) == other })
	took := time.Since(start)
	t.Logf("%s took over %s after %s released", other.id, took.Round(time.Millisecond), leader.id)
	// Released, not expired: the takeover comes well before a lease duration.
	if took >= testLeaseDuration {
		t.Errorf("takeover took %s, not under the lease duration %s: the Lease was not released", took, testLeaseDuration)
	}
	if id, _ := holder(t, env.Clientset, name); id != other.id {
		t.Errorf("the Lease names %q, want %s", id, other.id)
	}
}

// Two timers, each with its own Lease candidate: only the Lease holder runs
// tasks; when it loses the Lease the other one pulses, and the store lock
// is never consulted.
func TestLoopWithLeaseRunsOnlyWhileLeading(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	name := newLeaseName(t, env.Clientset)
	c := &clock{t: t0}
	st := store.NewMemory(c.now)
	type loop struct {
		cand  *candidate
		r     *rig
		ticks chan time.Time
		waits chan time.Duration
	}
	mk := func(id string) *loop {
		l := &loop{cand: newCandidate(t, env.Clientset, name, id), ticks: make(chan time.Time), waits: make(chan time.Duration)}
		l.r = newRig(t, st, c, id, func(o *pulse.Options) {
			o.Leader = l.cand.lease
			o.StartDelay = time.Minute
			o.After = func(d time.Duration) <-chan time.Time { l.waits <- d; return l.ticks }
			o.RenewAfter = func(time.Duration) <-chan time.Time { return nil }
		})
		return l
	}
	loops := []*loop{mk("pod-a"), mk("pod-b")}
	var leader *candidate
	eventually(t, 10*time.Second, "a leader", func() bool {
		leader = exactlyOne(t, loops[0].cand, loops[1].cand)
		return leader != nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func() { defer wg.Done(); l.r.s.Loop(ctx) }()
		<-l.waits // the start delay
	}
	round := func() {
		for _, l := range loops {
			l.ticks <- c.now()
			<-l.waits // the tick is over
		}
		c.add(45 * time.Minute)
	}
	runs := func(l *loop) int { return len(l.r.run.requests()) }
	round()
	round()
	first, second := loops[0], loops[1]
	if leader == second.cand {
		first, second = second, first
	}
	if runs(first) != 2 || runs(second) != 0 {
		t.Fatalf("runs while %s leads: %s %d, %s %d", first.cand.id, first.cand.id, runs(first), second.cand.id, runs(second))
	}
	if st := first.r.s.Status(ctx); !st.Leader || !strings.HasPrefix(st.Leadership, "lease default/") {
		t.Errorf("leader status: leader %v, leadership %q", st.Leader, st.Leadership)
	}
	// The leader's election ends (its Lease is released): the other takes over.
	first.cand.stop()
	eventually(t, 5*time.Second, "takeover", func() bool { return second.cand.leads(t) })
	round()
	round()
	if runs(first) != 2 || runs(second) != 2 {
		t.Errorf("runs after the takeover: %s %d (want 2), %s %d (want 2)", first.cand.id, runs(first), second.cand.id, runs(second))
	}
	cancel()
	wg.Wait()
	for _, l := range loops {
		if n := testutil.ToFloat64(metric(t, l.r.reg, "kubecrew_pulse_ticks_total", "not_leader")); n != 2 {
			t.Errorf("%s: not_leader ticks = %v, want 2", l.cand.id, n)
		}
	}
	// The store lock was never taken: a store-lock replica leads at once.
	third := newRig(t, st, c, "pod-c")
	if ok, err := third.s.Renew(context.Background()); err != nil || !ok {
		t.Errorf("store lock after lease-led loops: %v, %v", ok, err)
	}
}

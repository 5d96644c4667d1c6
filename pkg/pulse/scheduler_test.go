package pulse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// clock is a settable clock shared by the scheduler and the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// runner is a fake engine: it records requests and answers with the
// findings currently scripted; with hold set it blocks until released.
type runner struct {
	c        *clock
	mu       sync.Mutex
	reqs     []api.RunRequest
	findings []api.Finding
	status   string
	verdict  string
	hold     chan struct{}
	started  chan struct{}
	deadline time.Time
	n        int
}

func (r *runner) setFindings(fs []api.Finding) { r.mu.Lock(); r.findings = fs; r.mu.Unlock() }

func (r *runner) Run(ctx context.Context, req api.RunRequest) (api.RunResult, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.n++
	id := fmt.Sprintf("run-%d", r.n)
	fs, status, verdict, hold, started := r.findings, r.status, r.verdict, r.hold, r.started
	r.deadline, _ = ctx.Deadline()
	r.mu.Unlock()
	if status == "" {
		status = api.StatusCompleted
	}
	start := r.c.now()
	if started != nil {
		started <- struct{}{}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			status = api.StatusFailed
		}
	}
	return api.RunResult{RunID: id, Status: status, Verdict: verdict, Findings: fs, StartedAt: start, WorkflowType: req.WorkflowType}, nil
}

func (r *runner) requests() []api.RunRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.RunRequest(nil), r.reqs...)
}

// discord is an httptest Discord webhook.
type discord struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []map[string]any
	status []int
}

func newDiscord(t *testing.T) *discord {
	d := &discord{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		code := http.StatusNoContent
		if len(d.status) > 0 {
			code, d.status = d.status[0], d.status[1:]
		}
		if code/100 == 2 {
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			d.posts = append(d.posts, m)
		}
		d.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *discord) failNext(codes ...int) {
	d.mu.Lock()
	d.status = append(d.status, codes...)
	d.mu.Unlock()
}
func (d *discord) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.posts) }

type rig struct {
	c       *clock
	st      store.AgentStore
	run     *runner
	dc      *discord
	s       *pulse.Scheduler
	reg     *prometheus.Registry
	options pulse.Options
}

func newRig(t *testing.T, st store.AgentStore, c *clock, holder string, edit ...func(*pulse.Options)) *rig {
	t.Helper()
	r := &rig{c: c, st: st, run: &runner{c: c}, dc: newDiscord(t), reg: prometheus.NewRegistry()}
	dt, err := report.NewDiscord(r.dc.srv.URL+"/api/webhooks/1/token", nil)
	if err != nil {
		t.Fatal(err)
	}
	sender, _ := report.NewSender("noor", "platform-sre", "", "")
	d, err := report.NewDeliverer(report.Options{Sender: sender, Targets: []report.Target{dt}, Stamps: st, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r.options = pulse.Options{
		Agent: "platform-sre", Holder: holder, Tasks: tasks(t), Store: st, Runner: r.run, Reporter: d,
		Interval: 45 * time.Minute, Timeout: 20 * time.Minute, Enabled: true, Now: c.now,
		Metrics: pulse.NewMetrics(r.reg),
	}
	for _, e := range edit {
		e(&r.options)
	}
	r.s, err = pulse.New(r.options)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// restart builds a new scheduler on the same store (a new process).
func (r *rig) restart(t *testing.T) *rig {
	t.Helper()
	n := *r
	n.run = &runner{c: r.c}
	n.options.Runner = n.run
	n.options.Metrics = nil
	s, err := pulse.New(n.options)
	if err != nil {
		t.Fatal(err)
	}
	n.s = s
	return &n
}

func (r *rig) next(t *testing.T) pulse.TickResult {
	t.Helper()
	res, err := r.s.RunNext(context.Background(), pulse.TriggerHTTP)
	if err != nil {
		t.Fatalf("RunNext: %v", err)
	}
	return res
}

func ranKey(res pulse.TickResult) string {
	if res.Task == nil {
		return res.Outcome
	}
	return string(res.Task.Cadence)[:1] + fmt.Sprint(res.Task.Index)
}

var oom = []api.Finding{
	{Severity: "high", Namespace: "shop", Kind: "Deployment", Name: "cart", Reason: "CrashLoopBackOff", Detail: "exit 1", Remediation: "fix config"},
	{Severity: "critical", Namespace: "shop", Kind: "Deployment", Name: "payments", Reason: "OOMKilled", Detail: "limit 256Mi", Remediation: "raise the limit", Remediable: true},
}

func TestSchedulerRunsOneDueTaskPerTick(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a")
	var got []string
	for i := 0; i < 5; i++ {
		got = append(got, ranKey(r.next(t)))
		c.add(45 * time.Minute)
	}
	// All four never ran: file order; then the most overdue continuous.
	if s := strings.Join(got, " "); s != "c0 c1 d2 w3 c0" {
		t.Errorf("ran %s", s)
	}
	reqs := r.run.requests()
	if reqs[0].WorkflowType != api.WorkflowPulseTask || reqs[0].Task != tasks(t)[0].Text ||
		reqs[0].Context["pulse_task"] != tasks(t)[0].Key || reqs[0].Context["cadence"] != "continuous" {
		t.Errorf("request = %+v", reqs[0])
	}
	// The run is bounded by the pulse timeout.
	if want := c.now().Add(20 * time.Minute); !r.run.deadline.Equal(want) && time.Until(r.run.deadline) > 21*time.Minute {
		t.Errorf("run deadline %s", r.run.deadline)
	}
	if v := testutil.ToFloat64(metric(t, r.reg, "kubecrew_pulse_ticks_total", "ran")); v != 5 {
		t.Errorf("ticks{ran} = %v", v)
	}
}

func TestRunTaskByIndex(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a")
	res, err := r.s.RunTask(context.Background(), 3, pulse.TriggerHTTP)
	if err != nil || ranKey(res) != "w3" || res.Result.RunID != "run-1" {
		t.Fatalf("RunTask(3) = %+v, %v", res, err)
	}
	// Run again although not due.
	if res, err := r.s.RunTask(context.Background(), 3, pulse.TriggerHTTP); err != nil || ranKey(res) != "w3" {
		t.Fatalf("RunTask(3) again = %+v, %v", res, err)
	}
	for _, i := range []int{-1, 4, 99} {
		if _, err := r.s.RunTask(context.Background(), i, pulse.TriggerHTTP); !errors.Is(err, pulse.ErrUnknownTask) {
			t.Errorf("RunTask(%d) = %v", i, err)
		}
	}
}

// A restart honours the persisted last-run times: weekly is not re-run, a
// daily one is not forgotten.
func testRestart(t *testing.T, st store.AgentStore, c *clock) {
	r := newRig(t, st, c, "pod-a")
	for i := 0; i < 4; i++ { // everything runs once
		r.next(t)
	}
	c.add(time.Hour)
	r2 := r.restart(t)
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, ranKey(r2.next(t)))
	}
	if s := strings.Join(got, " "); s != "c0 c1 c0" {
		t.Errorf("after a restart 1h later ran %s, want only continuous tasks", s)
	}
	// 20 h after the first runs, in yet another process, the daily is due
	// and runs within a few ticks (the continuous tasks are overdue too).
	c.add(19 * time.Hour)
	r3 := r2.restart(t)
	got = nil
	for i := 0; i < 4; i++ {
		got = append(got, ranKey(r3.next(t)))
		c.add(45 * time.Minute)
	}
	if s := strings.Join(got, " "); s != "c0 c1 d2 c0" {
		t.Errorf("after 20h ran %s, want the daily among the sweeps and no weekly", s)
	}
	// GET /pulse's view: last runs and next due times from the store.
	status := r3.s.Status(context.Background())
	if len(status.Tasks) != 4 {
		t.Fatalf("status tasks = %d", len(status.Tasks))
	}
	w := status.Tasks[3]
	if w.LastRun == nil || !w.LastRun.Equal(t0) || !w.NextDue.Equal(t0.Add(6*24*time.Hour)) || w.Due || w.RunID != "run-4" || w.Outcome != "completed" {
		t.Errorf("weekly status = %+v", w)
	}
	if status.Interval != "45m0s" || status.TimeoutSeconds != 1200 || !status.Enabled || !status.Leader {
		t.Errorf("status = %+v", status)
	}
	// Six days on, the weekly runs again, once.
	c.add(6 * 24 * time.Hour)
	r4 := r3.restart(t)
	got = nil
	for i := 0; i < 6; i++ {
		got = append(got, ranKey(r4.next(t)))
		c.add(45 * time.Minute)
	}
	if s := strings.Join(got, " "); strings.Count(s, "w3") != 1 || strings.Count(s, "d2") != 1 {
		t.Errorf("after six days ran %s, want the weekly and the daily once each", s)
	}
}

func TestRestartHonoursPersistedStateMemory(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	testRestart(t, store.NewMemory(c.now), c)
}

func TestRestartHonoursPersistedStatePostgres(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	testRestart(t, openPostgres(t, c), c)
}

func TestReportsPostOnceRetryAndStayQuiet(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	st := store.NewMemory(c.now)
	r := newRig(t, st, c, "pod-a", func(o *pulse.Options) { o.Tasks = o.Tasks[:1] }) // the sweep only
	sweep := func() pulse.TickResult {
		t.Helper()
		c.add(45 * time.Minute)
		return r.next(t)
	}
	// Healthy tick: nothing posted.
	if res := sweep(); res.Report.Posted || r.dc.count() != 0 || !strings.Contains(res.Message, "healthy") {
		t.Fatalf("healthy tick: %+v, %d posts", res.Report, r.dc.count())
	}
	// Something is wrong: one post, with Noor's name and colour, critical first.
	r.run.setFindings(oom)
	if res := sweep(); !res.Report.Posted || r.dc.count() != 1 {
		t.Fatalf("first bad tick: %+v, %d posts", res.Report, r.dc.count())
	}
	p := r.dc.posts[0]
	embed := p["embeds"].([]any)[0].(map[string]any)
	if p["username"] != "Noor" || embed["color"] != float64(0x5865F2) || !strings.HasPrefix(embed["description"].(string), "🔴 shop/Deployment/payments") {
		t.Errorf("post = %v", p)
	}
	// Identical second tick: nothing.
	if res := sweep(); res.Report.Posted || r.dc.count() != 1 || res.Report.Targets[0].Status != report.StatusDuplicate {
		t.Fatalf("identical tick: %+v, %d posts", res.Report, r.dc.count())
	}
	// A changed report whose delivery fails (500) is retried at the next tick.
	r.run.setFindings(oom[:1])
	r.dc.failNext(http.StatusInternalServerError)
	if res := sweep(); res.Report.Posted || res.Report.Targets[0].Status != report.StatusFailed || res.Result.Status != api.StatusCompleted {
		t.Fatalf("failed delivery: %+v (the run must not fail)", res)
	}
	if res := sweep(); !res.Report.Posted || r.dc.count() != 2 {
		t.Fatalf("retry: %+v, %d posts", res.Report, r.dc.count())
	}
	// Healthy again: quiet; then the same problem comes back and is posted again.
	r.run.setFindings(nil)
	sweep()
	r.run.setFindings(oom)
	if res := sweep(); !res.Report.Posted || r.dc.count() != 3 {
		t.Fatalf("problem back: %+v, %d posts", res.Report, r.dc.count())
	}
}

func TestDailyNeverPosts(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a")
	r.run.setFindings(oom)
	res, err := r.s.RunTask(context.Background(), 2, pulse.TriggerHTTP)
	if err != nil || res.Report.Posted || r.dc.count() != 0 || !strings.Contains(res.Report.Reason, "housekeeping") {
		t.Fatalf("daily: %+v, %v, %d posts", res.Report, err, r.dc.count())
	}
	// Weekly posts its findings.
	if res, _ := r.s.RunTask(context.Background(), 3, pulse.TriggerHTTP); !res.Report.Posted {
		t.Errorf("weekly: %+v", res.Report)
	}
}

func TestConcurrentCallsAreBusy(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a")
	r.run.hold = make(chan struct{})
	r.run.started = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := r.s.RunNext(context.Background(), pulse.TriggerTimer)
		done <- err
	}()
	<-r.run.started
	_, err := r.s.RunNext(context.Background(), pulse.TriggerHTTP)
	if !errors.Is(err, pulse.ErrBusy) || !strings.Contains(err.Error(), "task 0") {
		t.Errorf("second RunNext = %v, want ErrBusy naming task 0", err)
	}
	if _, err := r.s.RunTask(context.Background(), 2, pulse.TriggerHTTP); !errors.Is(err, pulse.ErrBusy) {
		t.Errorf("RunTask while busy = %v", err)
	}
	if st := r.s.Status(context.Background()); st.Running == nil || st.Running.Task.Index != 0 {
		t.Errorf("status.running = %+v", st.Running)
	}
	close(r.run.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(r.run.requests()); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	if v := testutil.ToFloat64(metric(t, r.reg, "kubecrew_pulse_ticks_total", "busy")); v != 2 {
		t.Errorf("ticks{busy} = %v", v)
	}
}

func TestRunOutlivesItsCallerButNotTheTimeout(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a", func(o *pulse.Options) { o.Timeout = 50 * time.Millisecond })
	r.run.hold = make(chan struct{}) // never released: only the timeout ends it
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller hung up before the run even started
	res, err := r.s.RunNext(ctx, pulse.TriggerHTTP)
	if err != nil || res.Result == nil || res.Result.Status != api.StatusFailed {
		t.Fatalf("res = %+v, %v", res, err)
	}
	// The failure is recorded: the task's state says failed.
	sts, _ := r.st.PulseStates(context.Background(), "platform-sre")
	if len(sts) != 1 || sts[0].Outcome != api.StatusFailed {
		t.Errorf("states = %+v", sts)
	}
}

func TestTwoReplicasOnlyTheLeaderPulses(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"memory", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			c := &clock{t: t0}
			var st store.AgentStore
			if backend == "memory" {
				st = store.NewMemory(c.now)
			} else {
				st = openPostgres(t, c)
			}
			a := newRig(t, st, c, "pod-a")
			b := newRig(t, st, c, "pod-b")
			ran := map[string]int{}
			for i := 0; i < 6; i++ {
				for name, r := range map[string]*rig{"a": a, "b": b} {
					res, err := r.s.RunNext(context.Background(), pulse.TriggerTimer)
					switch {
					case errors.Is(err, pulse.ErrNotLeader):
					case err != nil:
						t.Fatal(err)
					case res.Outcome == pulse.OutcomeRan:
						ran[name]++
					}
				}
				// The timers' heartbeats renew the lock between ticks.
				for m := 0; m < 45; m++ {
					c.add(time.Minute)
					for _, r := range []*rig{a, b} {
						if _, err := r.s.Renew(context.Background()); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if (ran["a"] == 0) == (ran["b"] == 0) || ran["a"]+ran["b"] != 6 {
				t.Fatalf("runs per replica = %v, want all six on one", ran)
			}
			leader, follower := a, b
			if ran["b"] > 0 {
				leader, follower = b, a
			}
			if !leader.s.Status(context.Background()).Leader || follower.s.Status(context.Background()).Leader {
				t.Error("status.leader is wrong")
			}
			// The leader stops renewing (it died): after the TTL the other takes over.
			c.add(pulse.DefaultLockTTL)
			if res, err := follower.s.RunNext(context.Background(), pulse.TriggerTimer); err != nil || res.Outcome != pulse.OutcomeRan {
				t.Fatalf("takeover: %+v, %v", res, err)
			}
			if _, err := leader.s.RunNext(context.Background(), pulse.TriggerTimer); !errors.Is(err, pulse.ErrNotLeader) {
				t.Errorf("old leader after takeover: %v", err)
			}
			// A clean shutdown releases at once.
			if err := follower.s.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if res, err := leader.s.RunNext(context.Background(), pulse.TriggerTimer); err != nil || res.Outcome != pulse.OutcomeRan {
				t.Errorf("after release: %+v, %v", res, err)
			}
		})
	}
}

// Two timers against one store: only one pulses. The loops are driven by
// tick channels, and every tick's end is observed, so nothing sleeps.
func TestTwoLoopsOnlyOnePulses(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	st := store.NewMemory(c.now)
	type loop struct {
		r     *rig
		ticks chan time.Time
		waits chan time.Duration
	}
	mk := func(holder string) *loop {
		l := &loop{ticks: make(chan time.Time), waits: make(chan time.Duration)}
		l.r = newRig(t, st, c, holder, func(o *pulse.Options) {
			o.StartDelay = time.Minute
			o.LockTTL = 24 * time.Hour // no expiry between the clock's jumps; the heartbeat is tested apart
			o.After = func(d time.Duration) <-chan time.Time { l.waits <- d; return l.ticks }
		})
		return l
	}
	loops := []*loop{mk("pod-a"), mk("pod-b")}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func() { defer wg.Done(); l.r.s.Loop(ctx) }()
		if d := <-l.waits; d != time.Minute {
			t.Errorf("first wait %s, want the start delay", d)
		}
	}
	for i := 0; i < 4; i++ {
		for _, l := range loops {
			l.ticks <- c.now()
			if d := <-l.waits; d != 45*time.Minute { // the tick is over
				t.Errorf("wait %s, want the interval", d)
			}
		}
		c.add(45 * time.Minute)
	}
	cancel()
	wg.Wait()
	na, nb := len(loops[0].r.run.requests()), len(loops[1].r.run.requests())
	if na+nb != 4 || (na != 0 && nb != 0) {
		t.Errorf("runs: pod-a %d, pod-b %d; want 4 on one of them", na, nb)
	}
	notLeader := testutil.ToFloat64(metric(t, loops[0].r.reg, "kubecrew_pulse_ticks_total", "not_leader")) +
		testutil.ToFloat64(metric(t, loops[1].r.reg, "kubecrew_pulse_ticks_total", "not_leader"))
	if notLeader != 4 {
		t.Errorf("not_leader ticks = %v, want 4", notLeader)
	}
	// Loop released the lock on the way out: a third replica leads at once.
	third := newRig(t, st, c, "pod-c")
	if res, err := third.s.RunNext(context.Background(), pulse.TriggerTimer); err != nil || res.Outcome != pulse.OutcomeRan {
		t.Errorf("after both loops stopped: %+v, %v", res, err)
	}
}

func TestDisabledLoopReturnsButRunNextWorks(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a", func(o *pulse.Options) {
		o.Enabled = false
		o.After = func(time.Duration) <-chan time.Time { t.Error("a disabled timer waited"); return nil }
	})
	r.s.Loop(context.Background()) // returns at once
	if res := r.next(t); res.Outcome != pulse.OutcomeRan {
		t.Errorf("RunNext with the timer disabled: %+v", res)
	}
	if st := r.s.Status(context.Background()); st.Enabled || st.NextTick != nil {
		t.Errorf("status = %+v", st)
	}
}

func TestNothingDue(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a", func(o *pulse.Options) { // the daily only
		d := o.Tasks[2]
		d.Index = 0
		o.Tasks = []pulse.Task{d}
	})
	r.next(t)
	c.add(time.Hour)
	res := r.next(t)
	if res.Outcome != pulse.OutcomeNothingDue || res.NextDue == nil || !res.NextDue.Equal(t0.Add(20*time.Hour)) ||
		!strings.HasPrefix(res.Message, "nothing due") {
		t.Errorf("res = %+v", res)
	}
	empty := newRig(t, store.NewMemory(c.now), c, "pod-a", func(o *pulse.Options) { o.Tasks = nil })
	if res := empty.next(t); res.Outcome != pulse.OutcomeNothingDue || !strings.Contains(res.Message, "no tasks") {
		t.Errorf("no tasks: %+v", res)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	good := pulse.Options{Agent: "a", Holder: "h", Store: store.NewMemory(nil), Runner: &runner{}, Interval: time.Minute, Timeout: time.Second}
	bad := []func(*pulse.Options){
		func(o *pulse.Options) { o.Agent = "" },
		func(o *pulse.Options) { o.Holder = "" },
		func(o *pulse.Options) { o.Store = nil },
		func(o *pulse.Options) { o.Runner = nil },
		func(o *pulse.Options) { o.Interval = 0 },
		func(o *pulse.Options) { o.Timeout = -time.Second },
		func(o *pulse.Options) { o.Tasks = []pulse.Task{{Index: 1, Key: "k"}} },
		func(o *pulse.Options) { o.Tasks = []pulse.Task{{Index: 0, Key: "k"}, {Index: 1, Key: "k"}} },
	}
	if _, err := pulse.New(good); err != nil {
		t.Fatal(err)
	}
	for i, b := range bad {
		o := good
		b(&o)
		if _, err := pulse.New(o); err == nil {
			t.Errorf("bad option %d accepted", i)
		}
	}
}

func metric(t *testing.T, reg *prometheus.Registry, name, label string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == label {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return 0 })
}

// openPostgres opens the Postgres store in a fresh schema, dropped at
// cleanup. It skips without Postgres, and fails when CI=true.
func openPostgres(t *testing.T, c *clock) *store.Postgres {
	t.Helper()
	u := pgtest.Schema(t, "kc_pulse")
	p, err := store.OpenPostgres(context.Background(), u, nil, store.WithClock(c.now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// The timer's heartbeat keeps leadership through long sleeps; when the
// timer stops, the lock is released and another replica leads at once.
func TestHeartbeatKeepsLeadership(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	st := store.NewMemory(c.now)
	renews := make(chan time.Time)
	asked := make(chan time.Duration)
	a := newRig(t, st, c, "pod-a", func(o *pulse.Options) {
		o.StartDelay = 24 * time.Hour
		o.After = func(time.Duration) <-chan time.Time { return nil } // the timer never ticks here
		o.RenewAfter = func(d time.Duration) <-chan time.Time { asked <- d; return renews }
	})
	b := newRig(t, st, c, "pod-b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.s.Loop(ctx) }()
	if d := <-asked; d != pulse.DefaultLockTTL/3 {
		t.Errorf("heartbeat every %s, want a third of the TTL", d)
	}
	for i := 0; i < 5; i++ {
		renews <- c.now()
		<-asked // the renewal is done
		if !a.s.Status(ctx).Leader {
			t.Fatalf("beat %d: pod-a does not lead", i)
		}
		c.add(pulse.DefaultLockTTL - time.Second) // nearly expired at every beat
		if _, err := b.s.RunNext(context.Background(), pulse.TriggerHTTP); !errors.Is(err, pulse.ErrNotLeader) {
			t.Fatalf("beat %d: pod-b pulsed (%v)", i, err)
		}
	}
	cancel()
	<-done
	if res, err := b.s.RunNext(context.Background(), pulse.TriggerHTTP); err != nil || res.Outcome != pulse.OutcomeRan {
		t.Errorf("after pod-a stopped: %+v, %v", res, err)
	}
}

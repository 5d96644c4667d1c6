// Package sandbox is `make run` and `make e2e` as a library: it starts a
// throwaway Kubernetes cluster (hack/testenv.sh: real etcd + kube-apiserver
// on loopback, and in the sim tier controller-manager, scheduler and kwok
// fake nodes), loads the broken workloads, creates a local GitOps
// repository, starts the core and the five agents as child processes, and
// drives the demo incident (an Alertmanager OOMKill alert → the core →
// Noor → Sol's PR → Vera's review → merge), printed as a timeline.
//
// Run is the whole of `make run`; the eval suite (services/agent/cmd/eval)
// uses the parts: StartCluster, ApplySimFixtures, ChoosePorts, StartFleet
// and Supervisor.Stop, Sandbox.Stop. With KUBECONFIG set the fleet runs
// against that cluster instead, read-only, unless AllowActions (see
// external.go).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Options are the sandbox's settings.
type Options struct {
	Root      string // repository root (hack/testenv.sh, hack/fixtures)
	BinDir    string // holds agent and core
	RunDir    string // logs, GitOps repository, cluster directory
	Headless  bool
	CorePort  int // 0 = a free port
	AgentPort int // first of five; 0 = free ports
	Timeout   time.Duration
	// Kubeconfig of the user's cluster; "" = start a sandbox.
	Kubeconfig   string
	AllowActions bool
	// Tier of the sandbox cluster (TierSim, TierAPI); "" = DefaultTier.
	Tier       string
	LLMBaseURL string
	Environ    []string
	// CoreEnv are more settings of the core (tests: chat webhooks and a
	// routes file, which the sandbox otherwise controls).
	CoreEnv map[string]string
	// AfterIncident, when set, is called with the running fleet once the
	// incident has run (tests look at the live agents before the stop).
	AfterIncident func(f *Fleet, o *Outcome, err error)
}

// ErrInterrupted: Ctrl-C came before the fleet was up (or, headless,
// before the incident ended).
var ErrInterrupted = errors.New("interrupted")

// ErrNotMerged is the headless failure: the incident did not end merged.
var ErrNotMerged = errors.New("the incident did not reach \"merged\"")

// Run starts everything, drives the incident (when the mode has one), and
// then either stops (headless) or waits for ctx to end. It always stops
// what it started before it returns.
func Run(ctx, force context.Context, o Options, out io.Writer) (err error) {
	r := &runner{o: o, out: out, started: time.Now(), sup: NewSupervisor()}
	if err := r.prepare(); err != nil {
		return err
	}
	banner(out, r.o, r.m)
	defer func() {
		if ctx.Err() != nil && err != nil {
			err = fmt.Errorf("%w (%v)", ErrInterrupted, err)
		}
		r.stop(force, err)
	}()
	inc, err := r.cluster(ctx)
	if err != nil {
		return err
	}
	if r.m != modeReadOnly {
		if err := r.gitopsRepo(&inc); err != nil {
			return err
		}
	}
	// Free ports are chosen only now, once the cluster holds its own (its
	// ports are random too), so the two cannot pick the same one.
	r.say("starting the core and five agents (logs in %s)", r.logDir)
	fleet, err := StartFleetOnFreePorts(ctx, FleetConfig{
		BinDir: r.o.BinDir, LogDir: r.logDir, Host: "127.0.0.1", CorePort: r.o.CorePort, AgentPort: r.o.AgentPort,
		Kubeconfig: r.kubeconfig, GitOpsRepo: inc.Repo, ReadOnly: r.m == modeReadOnly, LLMBaseURL: r.o.LLMBaseURL, Environ: r.o.Environ,
		CoreExtra: r.o.CoreEnv,
	}, r.sup, out)
	writePIDs(r.o.RunDir, nil, r.sup)
	if err != nil {
		return err
	}
	r.say("fleet ready %.1fs after start", time.Since(r.started).Seconds())
	var outcome *Outcome
	var incErr error
	if r.m != modeReadOnly {
		outcome, incErr = r.incident(ctx, fleet, inc)
	}
	if r.o.Headless {
		if incErr != nil {
			return fmt.Errorf("%w: %v", ErrNotMerged, incErr)
		}
		if outcome == nil || !outcome.Merged {
			return ErrNotMerged
		}
		return nil
	}
	tryIt(out, fleet, outcome, r.m)
	select {
	case <-ctx.Done():
		return nil
	case p := <-r.sup.Exited():
		return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", p.Name, p.err, p.LogPath, tail(p.LogPath, 20))
	}
}

// runner is one `make run`: its settings, what it started and what stops
// it again.
type runner struct {
	o          Options
	m          mode
	out        io.Writer
	started    time.Time
	sup        *Supervisor
	cleanups   []func() // run last first, after the fleet stopped
	autoDir    bool     // the run directory is ours to remove
	logDir     string
	kubeconfig string
}

func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.out, "[kubecrew] "+format+"\n", args...)
}

// prepare checks the settings before anything starts: the binaries, the
// fixed ports (a taken one must not cost a cluster start; the fleet checks
// again when it binds), the mode; and makes the run directory.
func (r *runner) prepare() (err error) {
	o := &r.o
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return err
	}
	for _, b := range []string{"agent", "core"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return fmt.Errorf("%s/%s missing: run `make build` first (%w)", o.BinDir, b, err)
		}
	}
	var fixed []int
	if o.CorePort != 0 {
		fixed = append(fixed, o.CorePort)
	}
	for i := range Personas {
		if o.AgentPort != 0 {
			fixed = append(fixed, o.AgentPort+i)
		}
	}
	if err := portsFree("127.0.0.1", fixed); err != nil {
		return err
	}
	r.autoDir = o.RunDir == ""
	if r.autoDir {
		if o.RunDir, err = os.MkdirTemp("", "kubecrew-run."); err != nil {
			return err
		}
	}
	r.logDir = filepath.Join(o.RunDir, "logs")
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return err
	}
	if o.Tier == "" {
		o.Tier = DefaultTier
	}
	r.m = modeOf(*o)
	r.kubeconfig = o.Kubeconfig
	if o.Headless && r.m == modeReadOnly {
		return errors.New("-headless drives the demo incident, which needs the sandbox (unset KUBECONFIG) or, on your own cluster, KUBECREW_ALLOW_ACTIONS=1")
	}
	return nil
}

// stop stops the fleet, then the rest last first; force ending skips the
// graceful part. A passing headless run in a directory of its own (make
// test) leaves no litter; a failing one keeps its logs.
func (r *runner) stop(force context.Context, err error) {
	what := "the fleet"
	if r.m == modeSandbox {
		what += " and the sandbox cluster"
	}
	r.say("stopping %s", what)
	stopCtx, cancel := context.WithCancel(force)
	defer cancel()
	t0 := time.Now()
	r.sup.Stop(stopCtx, 10*time.Second)
	t1 := time.Now()
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	kept := "logs kept in " + r.logDir
	if r.o.Headless && r.autoDir && err == nil {
		_ = os.RemoveAll(r.o.RunDir)
		kept = "run directory removed"
	}
	r.say("stopped everything it started (fleet %.1fs, then %.1fs); %s", t1.Sub(t0).Seconds(), time.Since(t1).Seconds(), kept)
}

// cluster readies the mode's cluster: the sandbox started and its fixtures
// loaded, the broken workloads applied to the user's cluster, or (read-only)
// the user's cluster checked.
func (r *runner) cluster(ctx context.Context) (IncidentConfig, error) {
	o, out := r.o, r.out
	inc := IncidentConfig{Namespace: FixtureNamespace, RepoPath: "apps/" + FixtureNamespace + "/broken-workloads.yaml"}
	switch r.m {
	case modeSandbox:
		sb, err := StartCluster(ctx, o.Root, filepath.Join(o.RunDir, "cluster"), o.Tier, nil, out)
		if sb != nil {
			r.cleanups = append(r.cleanups, func() { sb.Stop(out) })
			writePIDs(o.RunDir, sb.PIDs(), nil)
		}
		if err != nil {
			return inc, err
		}
		r.kubeconfig = sb.Kubeconfig
		cs, err := Clientset(r.kubeconfig)
		if err != nil {
			return inc, err
		}
		t0 := time.Now()
		if o.Tier == TierSim {
			if err := ApplySimFixtures(ctx, cs, o.Root, FixtureNamespace, out); err != nil {
				return inc, err
			}
			r.say("the six broken workloads and a healthy one run in namespace %s (%d ms)", FixtureNamespace, time.Since(t0).Milliseconds())
		} else {
			if err := LoadFixtures(ctx, cs, FixtureNamespace, time.Now()); err != nil {
				return inc, err
			}
			r.say("loaded the six broken workloads and a healthy one into namespace %s (%d ms)", FixtureNamespace, time.Since(t0).Milliseconds())
		}
		inc.Clientset = cs
	case modeActions:
		cs, err := Clientset(r.kubeconfig)
		if err != nil {
			return inc, err
		}
		undo, err := ApplyRealFixtures(ctx, cs, FixtureNamespace, out)
		if undo != nil {
			r.cleanups = append(r.cleanups, func() { undo(out) })
		}
		if err != nil {
			return inc, err
		}
		inc.Clientset = cs
	case modeReadOnly:
		if err := checkCluster(ctx, r.kubeconfig, out); err != nil {
			return inc, err
		}
	}
	return inc, nil
}

// gitopsRepo creates the local GitOps repository holding the fixtures'
// manifests, where Sol opens his pull request.
func (r *runner) gitopsRepo(inc *IncidentConfig) error {
	repo, err := initRepo(r.o, inc.RepoPath)
	if err != nil {
		return err
	}
	inc.Repo = repo
	r.say("GitOps repository (local git, bare): %s holding %s and the planted files of %s", repo, inc.RepoPath, PlantedDir)
	return nil
}

// incident drives the demo incident within -timeout and prints its
// summary.
func (r *runner) incident(ctx context.Context, fleet *Fleet, inc IncidentConfig) (*Outcome, error) {
	fmt.Fprintln(r.out)
	r.say("the incident: an OOMKill alert for %s/%s, as Alertmanager would send it", FixtureNamespace, IncidentWorkload)
	ictx, cancel := context.WithTimeoutCause(ctx, r.o.Timeout, fmt.Errorf("the incident took longer than -timeout %s", r.o.Timeout))
	outcome, err := Drive(ictx, fleet, inc, NewTimeline(r.out, nil))
	cancel()
	fmt.Fprintln(r.out)
	summary(r.out, fleet, outcome, err, r.started)
	showReview(ctx, r.out, fleet)
	if r.o.AfterIncident != nil {
		r.o.AfterIncident(fleet, outcome, err)
	}
	return outcome, err
}

type mode int

const (
	modeSandbox  mode = iota // no KUBECONFIG: our own API server and fixtures
	modeReadOnly             // the user's cluster, read-only
	modeActions              // the user's cluster, KUBECREW_ALLOW_ACTIONS=1
)

func modeOf(o Options) mode {
	switch {
	case o.Kubeconfig == "":
		return modeSandbox
	case o.AllowActions:
		return modeActions
	}
	return modeReadOnly
}

func banner(out io.Writer, o Options, m mode) {
	p := func(format string, args ...any) { fmt.Fprintf(out, "[kubecrew] "+format+"\n", args...) }
	p("kubecrew — a fleet of Kubernetes SRE agents: Noor detects, Sol fixes, Vera reviews")
	switch m {
	case modeSandbox:
		if o.Tier == TierSim {
			p("cluster: a throwaway sandbox (real etcd, kube-apiserver, controller-manager, scheduler and kwok fake nodes on loopback,")
			p("         hack/testenv.sh); nothing outside this machine is touched (%s=plain: API server and static fixtures only)", TierEnv)
		} else {
			p("cluster: a throwaway sandbox (real etcd + kube-apiserver on loopback, hack/testenv.sh, static fixtures); nothing outside")
			p("         this machine is touched")
		}
		p("         (set KUBECONFIG to run the fleet against your own cluster instead, read-only)")
	case modeReadOnly:
		p("cluster: YOUR cluster from KUBECONFIG=%s — READ-ONLY", o.Kubeconfig)
		p("         no fixtures are loaded and no incident is driven; Sol runs without k8s_rollout and without a GitOps")
		p("         repository, so no agent can change the cluster or open a pull request.")
		p("         KUBECREW_ALLOW_ACTIONS=1 opts in to the demo there (a namespace %s with broken workloads, Sol's", FixtureNamespace)
		p("         rollout restart enabled, PRs to a local repository); `KUBECONFIG= make run` uses a sandbox instead.")
	case modeActions:
		p("cluster: YOUR cluster from KUBECONFIG=%s — ACTIONS ALLOWED (KUBECREW_ALLOW_ACTIONS=1)", o.Kubeconfig)
		p("         the broken workloads are created in a new namespace %s (deleted again at Ctrl-C); Sol may", FixtureNamespace)
		p("         rollout-restart; his pull requests go to a local GitOps repository in the run directory.")
	}
	if o.LLMBaseURL == "" {
		p("model: none — deterministic playbooks on real cluster data (set LLM_BASE_URL, LLM_API_KEY, AGENT_MODEL for a model)")
	} else {
		p("model: LLM_BASE_URL=%s (passed through to every agent)", o.LLMBaseURL)
	}
	p("run directory: %s", o.RunDir)
}

// StartCluster installs the tier's binaries (first time only, saying how
// long that takes) and starts the sandbox cluster in dir; extraEnv goes to
// hack/testenv.sh (e.g. AUDIT_POLICY_FILE). The caller stops it.
func StartCluster(ctx context.Context, root, dir, tier string, extraEnv []string, out io.Writer) (*Sandbox, error) {
	p := func(format string, args ...any) { fmt.Fprintf(out, "[kubecrew] "+format+"\n", args...) }
	if !TestenvInstalled(os.Getenv, tier) {
		what := "etcd and kube-apiserver"
		if tier == TierSim {
			what = "etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok"
		}
		p("first run on this machine: building %s from source with Go.", what)
		p("this takes about 10 minutes on 2 cores (the API server build is the slow part); the binaries are cached in")
		p("%s, so later runs start in seconds. Progress:", filepath.Dir(testenvBin(os.Getenv)))
	}
	t0 := time.Now()
	if err := InstallTestenv(ctx, root, tier, out); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("hack/testenv.sh install: %w", err)
	}
	if d := time.Since(t0); d > 30*time.Second {
		p("API server binaries built in %s", d.Round(time.Second))
	}
	p("starting the sandbox API server")
	sb, err := StartSandbox(ctx, root, dir, tier, out, extraEnv...)
	if err != nil {
		return sb, err
	}
	p("sandbox API server ready; KUBECONFIG=%s", sb.Kubeconfig)
	return sb, nil
}

// ChoosePorts replaces 0 with free loopback ports: a run of five for the
// agents, one for the core.
func ChoosePorts(core, agent int) (int, int, error) {
	free := func(n int) (int, error) {
		var ls []net.Listener
		defer func() {
			for _, l := range ls {
				l.Close()
			}
		}()
		first := 0
		for tries := 0; tries < 50; tries++ {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			p := l.Addr().(*net.TCPAddr).Port
			l.Close()
			if p+n > 65535 {
				continue
			}
			ok := true
			for i := 0; i < n; i++ {
				li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
				if err != nil {
					ok = false
					break
				}
				ls = append(ls, li)
			}
			if ok {
				first = p
				break
			}
			for _, l := range ls {
				l.Close()
			}
			ls = nil
		}
		if first == 0 {
			return 0, errors.New("no free run of loopback ports")
		}
		return first, nil
	}
	var err error
	if agent == 0 {
		if agent, err = free(len(Personas)); err != nil {
			return 0, 0, err
		}
	}
	if core == 0 {
		for core == 0 || (core >= agent && core < agent+len(Personas)) {
			if core, err = free(1); err != nil {
				return 0, 0, err
			}
		}
	}
	return core, agent, nil
}

// PIDs reads the pid files testenv.sh start wrote.
func (s *Sandbox) PIDs() map[string]int {
	out := map[string]int{}
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		b, err := os.ReadFile(filepath.Join(s.Dir, c+".pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pid); err == nil {
			out[c] = pid
		}
	}
	return out
}

// writePIDs records every process the sandbox started in RUN/pids
// ("name pid" lines), for the Ctrl-C check and for humans.
func writePIDs(runDir string, cluster map[string]int, sup *Supervisor) {
	path := filepath.Join(runDir, "pids")
	lines := map[string]bool{}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				lines[l] = true
			}
		}
	}
	for n, p := range cluster {
		lines[fmt.Sprintf("%s %d", n, p)] = true
	}
	if sup != nil {
		sup.mu.Lock()
		for _, p := range sup.procs {
			lines[fmt.Sprintf("%s %d", p.Name, p.PID())] = true
		}
		sup.mu.Unlock()
	}
	all := make([]string, 0, len(lines))
	for l := range lines {
		all = append(all, l)
	}
	sort.Strings(all)
	_ = os.WriteFile(path, []byte(strings.Join(all, "\n")+"\n"), 0o644)
}

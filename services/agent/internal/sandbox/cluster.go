package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// Cluster tiers of hack/testenv.sh (KUBECREW_SANDBOX_TIER picks one, see
// ParseTier).
//
// TierAPI ("plain") is etcd + kube-apiserver alone: objects stay exactly as
// written, which the static fixtures (kubetest.BrokenObjects) need; no
// controller may run there (the Deployment controller would rewrite the
// fixture statuses at once).
//
// TierSim adds kube-controller-manager, kube-scheduler and kwok: the
// sandbox creates fake nodes and only the fixture Deployments (with sim/*
// pod labels, ApplySimFixtures); real controllers make ReplicaSets and pods,
// the scheduler binds them (or reports the unschedulable one) and kwok plays
// each pod's failure from the Stages in hack/kwok-stages.yaml.
const (
	TierAPI = "api"
	TierSim = "sim"
)

// FixtureNamespace is where the sandbox loads the broken workloads.
const FixtureNamespace = "kubecrew-fixtures"

// Sandbox is a throwaway API server started by hack/testenv.sh.
type Sandbox struct {
	root       string
	Dir        string // testenv run directory (pid files, logs, kubeconfig)
	Kubeconfig string
	pgid       int // process group of `testenv.sh start` (etcd, apiserver, … live in it)
}

// testenvBin is where hack/testenv.sh caches its binaries.
func testenvBin(getenv func(string) string) string {
	cache := getenv("K8S_TESTENV_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "k8s-testenv")
	}
	v := getenv("K8S_VERSION")
	if v == "" {
		v = "v1.37.2"
	}
	return filepath.Join(cache, v, "bin")
}

// TestenvInstalled reports whether the binaries tier needs are cached.
func TestenvInstalled(getenv func(string) string, tier string) bool {
	bins := []string{"kube-apiserver", "etcd"}
	if tier == TierSim {
		bins = append(bins, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	dir := testenvBin(getenv)
	for _, b := range bins {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func tierEnv(tier string) []string {
	on := "0"
	if tier == TierSim {
		on = "1"
	}
	return []string{"WITH_KCM=" + on, "WITH_SCHEDULER=" + on, "WITH_KWOK=" + on}
}

// InstallTestenv runs `hack/testenv.sh install` (a no-op when cached),
// streaming its progress lines to out.
func InstallTestenv(ctx context.Context, root, tier string, out io.Writer) error {
	cmd := testenvCmd(ctx, root, tier, "install")
	return runStreaming(cmd, out, "  testenv: ")
}

// StartSandbox runs `hack/testenv.sh start dir`, with extraEnv added to its
// environment.
func StartSandbox(ctx context.Context, root, dir, tier string, out io.Writer, extraEnv ...string) (*Sandbox, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := testenvCmd(ctx, root, tier, "start", dir)
	cmd.Env = append(cmd.Env, extraEnv...)
	s := &Sandbox{root: root, Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	err := runStreaming(cmd, out, "  testenv: ")
	if cmd.Process != nil {
		s.pgid = cmd.Process.Pid
	}
	if err != nil {
		s.Stop(out)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 {
			return nil, fmt.Errorf("the API server binaries are not installed (hack/testenv.sh install): %w", err)
		}
		return nil, fmt.Errorf("hack/testenv.sh start: %w", err)
	}
	return s, nil
}

// Stop kills what testenv.sh start started (by its pid files) and, to be
// sure, whatever is left in its process group. It keeps nothing.
func (s *Sandbox) Stop(out io.Writer) {
	if s == nil {
		return
	}
	// A throwaway cluster needs no graceful drain (etcd's data is deleted
	// next): kill it at once instead of waiting out the API server's
	// shutdown, then let the script clean up.
	for _, pid := range s.PIDs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	cmd := exec.Command("bash", filepath.Join(s.root, "hack", "testenv.sh"), "stop", s.Dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(out, "  hack/testenv.sh stop: %v: %s\n", err, strings.TrimSpace(string(b)))
	}
	if s.pgid > 0 {
		// the group outlives `start` only through its background children
		_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
	}
}

func testenvCmd(ctx context.Context, root, tier string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "hack", "testenv.sh")}, args...)...)
	cmd.Env = append(os.Environ(), tierEnv(tier)...)
	cmd.Dir = root
	// Own process group: a terminal Ctrl-C reaches the sandbox only, which
	// then stops the cluster in order; cancelling kills the whole group
	// (go build children of install included).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runStreaming runs cmd, copying its stderr lines to out with prefix as
// they come (testenv.sh logs progress there; stdout holds only its DIR).
func runStreaming(cmd *exec.Cmd, out io.Writer, prefix string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stderr = pw
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	pw.Close()
	out = &lockedWriter{w: out}
	done := make(chan struct{})
	lines := make(chan struct{}, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(out, "%s%s\n", prefix, strings.TrimPrefix(sc.Text(), "[k8s-testenv] "))
			select {
			case lines <- struct{}{}:
			default:
			}
		}
	}()
	// A cold install is silent for minutes at a time (module downloads,
	// the API server's compile): say it is still going.
	start := time.Now()
	stopBeat := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		quiet := false
		for {
			select {
			case <-stopBeat:
				return
			case <-lines:
				quiet = false
			case <-t.C:
				if quiet {
					fmt.Fprintf(out, "%sstill working (%s so far)\n", prefix, time.Since(start).Round(time.Second))
				}
				quiet = true
			}
		}
	}()
	err = cmd.Wait()
	close(stopBeat)
	pr.Close()
	<-done
	return err
}

// Clientset connects to the cluster of kubeconfig.
func Clientset(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

// LoadFixtures writes the six broken workloads and the healthy one into
// namespace ns as a real cluster would hold them (kubetest.BrokenObjects):
// Deployments, ReplicaSets, pods with container statuses, events.
func LoadFixtures(ctx context.Context, cs kubernetes.Interface, ns string, now time.Time) error {
	objs, err := kubetest.BrokenObjects(ns, now)
	if err != nil {
		return fmt.Errorf("building fixtures: %w", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("namespace %s exists already; the sandbox loads fixtures into a fresh cluster only", ns)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if err := kubetest.Load(ctx, cs, objs, 8); err != nil {
		return fmt.Errorf("loading fixtures into %s: %w", ns, err)
	}
	return nil
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

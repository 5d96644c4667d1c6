// Package kubetest gives integration tests a real kube-apiserver (etcd +
// kube-apiserver on loopback, no kubelet, no controller-manager) and the
// fixtures kubecrew's cluster tools are tested against.
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
//	func TestX(t *testing.T) { env := kubetest.Start(t); ... }
//
// When KUBECREW_TEST_KUBECONFIG names a kubeconfig (make test starts one
// cluster for every package and sets it), that cluster is reused. Otherwise
// the first Start in a test binary runs `hack/testenv.sh start` (the repo
// root is found by walking up to go.work) and Main stops it when the tests
// are done. Without the binaries the test skips with how to get them; with
// CI=true it fails instead.
package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Environment variables.
const (
	// EnvKubeconfig names a running test cluster to reuse.
	EnvKubeconfig = "KUBECREW_TEST_KUBECONFIG"
	// EnvCI=true turns "skip: no API server" into a failure.
	EnvCI = "CI"
	// LimitedUser is the token user every testenv cluster has, with no RBAC
	// until a test binds some (see Env.Limited).
	LimitedUser = "testenv-limited"
)

const installHint = "run `hack/testenv.sh install` (~10 min first time) to build etcd and kube-apiserver"

// Env is a running test API server.
type Env struct {
	Kubeconfig string
	Config     *rest.Config
	Clientset  *kubernetes.Clientset
	// Dir is the testenv run directory (logs, pid files, env).
	Dir string

	limitedToken string
	owned        bool // started by this process: Main stops it
	limitedMu    sync.Mutex
}

var (
	once     sync.Once
	shared   *Env
	startErr error
	errSkip  = errors.New("no test API server")
)

// Start returns the package's shared API server, starting it on first use.
func Start(tb testing.TB) *Env {
	tb.Helper()
	once.Do(func() { shared, startErr = start() })
	if startErr != nil {
		if errors.Is(startErr, errSkip) && os.Getenv(EnvCI) != "true" {
			tb.Skipf("kube-apiserver integration test skipped: %v", startErr)
		}
		tb.Fatalf("kube-apiserver integration test cannot run: %v", startErr)
	}
	return shared
}

var (
	privateMu sync.Mutex
	private   = map[string]*privateEnv{}
)

type privateEnv struct {
	once sync.Once
	env  *Env
	err  error
}

// Private returns a private API server named key, started on first use and
// shared by every test and benchmark of the binary that asks for the same
// key; Main stops it. Use it for fixtures that must not mix with others
// but are expensive to load more than once.
func Private(tb testing.TB, key string) *Env {
	tb.Helper()
	return privateCluster(tb, key, nil, nil)
}

// privateCluster is Private with extra environment for hack/testenv.sh
// start and a set-up run once after the start.
func privateCluster(tb testing.TB, key string, extraEnv []string, setup func(*Env) error) *Env {
	tb.Helper()
	privateMu.Lock()
	p := private[key]
	if p == nil {
		p = &privateEnv{}
		private[key] = p
	}
	privateMu.Unlock()
	p.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			p.err = err
			return
		}
		p.env, p.err = startCluster(root, extraEnv)
		if p.env != nil {
			p.env.owned = true
		}
		if p.err == nil && setup != nil {
			p.err = setup(p.env)
		}
	})
	if p.err != nil {
		if errors.Is(p.err, errSkip) && os.Getenv(EnvCI) != "true" {
			tb.Skipf("kube-apiserver integration test skipped: %v", p.err)
		}
		tb.Fatalf("kube-apiserver integration test cannot run: %v", p.err)
	}
	return p.env
}

// Main runs the tests and stops the API servers Start and Private started.
// Use it as os.Exit(kubetest.Main(m)) in TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	envs := []*Env{shared}
	privateMu.Lock()
	for _, p := range private {
		envs = append(envs, p.env)
	}
	privateMu.Unlock()
	for _, e := range envs {
		if e != nil && e.owned {
			if err := e.stop(); err != nil {
				fmt.Fprintf(os.Stderr, "kubetest: stopping test API server %s: %v\n", e.Dir, err)
			}
		}
	}
	return code
}

func start() (*Env, error) {
	if kc := os.Getenv(EnvKubeconfig); kc != "" {
		e, err := fromKubeconfig(kc, filepath.Dir(kc))
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvKubeconfig, kc, err)
		}
		return e, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return startCluster(root, nil)
}

// startCluster runs hack/testenv.sh start with extra environment; a missing
// installation (the script's exit code 2) wraps errSkip.
func startCluster(root string, extraEnv []string) (*Env, error) {
	dir, err := os.MkdirTemp("", "kubecrew-kubetest-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 3*time.Minute, errors.New("hack/testenv.sh start took over 3 minutes"))
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "testenv.sh"), "start", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(append(os.Environ(), "WITH_KCM=0", "WITH_SCHEDULER=0", "WITH_KWOK=0"), extraEnv...)
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(dir)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 { // the script's "not installed"
			return nil, fmt.Errorf("%w: %s (%s)", errSkip, installHint, strings.TrimSpace(lastLine(stderr.String())))
		}
		return nil, fmt.Errorf("hack/testenv.sh start: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	e, err := fromKubeconfig(filepath.Join(dir, "kubeconfig"), dir)
	if err != nil {
		return nil, err
	}
	e.owned = true
	return e, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// RepoRoot walks up from the working directory to the directory holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.work above the working directory; run tests inside the repository")
		}
		dir = parent
	}
}

func fromKubeconfig(path, dir string) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS = -1 // no client-side rate limit: fixtures create thousands of objects
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := discovery.ToDiscoveryInterfaceWithContext(cs.Discovery()).ServerVersionWithContext(ctx); err != nil {
		return nil, fmt.Errorf("API server does not answer: %w", err)
	}
	e := &Env{Kubeconfig: path, Config: cfg, Clientset: cs, Dir: dir}
	e.limitedToken = readEnvFile(filepath.Join(dir, "env"))["TESTENV_LIMITED_TOKEN"]
	return e, nil
}

// readEnvFile parses the "export K=V" lines hack/testenv.sh writes.
func readEnvFile(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

func (e *Env) stop() error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "testenv.sh"), "stop", e.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// Limited returns a client for LimitedUser after binding exactly rules to
// it cluster-wide (replacing earlier rules; not for parallel tests with
// different rules). It authenticates with the user's token when the
// cluster has one, else impersonates the user. It returns once the API
// server's authorizer sees the binding.
func (e *Env) Limited(tb testing.TB, rules []rbacv1.PolicyRule) *kubernetes.Clientset {
	tb.Helper()
	e.limitedMu.Lock()
	tb.Cleanup(e.limitedMu.Unlock)
	ctx := context.Background()
	name := "kubecrew-test-limited"
	rbac := e.Clientset.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		cur, gerr := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			tb.Fatalf("get clusterrole: %v", gerr)
		}
		cur.Rules = rules
		if _, err := rbac.ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			tb.Fatalf("update clusterrole: %v", err)
		}
	} else if err != nil {
		tb.Fatalf("create clusterrole: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: LimitedUser}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("create clusterrolebinding: %v", err)
	}
	cfg := rest.CopyConfig(e.Config)
	if e.limitedToken != "" {
		cfg.BearerToken, cfg.BearerTokenFile = e.limitedToken, ""
	} else {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: LimitedUser}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("limited client: %v", err)
	}
	// the RBAC authorizer reads from an informer: wait until the first rule is visible
	if len(rules) > 0 && len(rules[0].Resources) > 0 && len(rules[0].Verbs) > 0 {
		r := rules[0]
		attrs := authorizationAttributes(r)
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			return allowed(ctx, cs, attrs)
		})
		if err != nil {
			tb.Fatalf("RBAC for %s not effective after 10s: %v", LimitedUser, err)
		}
	}
	return cs
}

// LimitedKubeconfig binds exactly rules to LimitedUser (as Limited does)
// and writes a kubeconfig for that user, for code that takes a kubeconfig
// path (an agent's KUBECONFIG). With no rules it returns once the
// authorizer denies the user a List of pods.
func (e *Env) LimitedKubeconfig(tb testing.TB, rules []rbacv1.PolicyRule) string {
	tb.Helper()
	cs := e.Limited(tb, rules)
	if len(rules) == 0 {
		ctx := context.Background()
		attrs := &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			ok, err := allowed(ctx, cs, attrs)
			return !ok, err
		})
		if err != nil {
			tb.Fatalf("%s still may list pods after its rules were removed: %v", LimitedUser, err)
		}
	}
	auth := &clientcmdapi.AuthInfo{}
	if e.limitedToken != "" {
		auth.Token = e.limitedToken
	} else {
		auth.Impersonate = LimitedUser
		auth.Token = e.Config.BearerToken
		auth.ClientCertificateData, auth.ClientKeyData = e.Config.CertData, e.Config.KeyData
		auth.ClientCertificate, auth.ClientKey = e.Config.CertFile, e.Config.KeyFile
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: e.Config.Host,
		CertificateAuthorityData: e.Config.CAData, CertificateAuthority: e.Config.CAFile, InsecureSkipTLSVerify: e.Config.Insecure}
	cfg.AuthInfos[LimitedUser] = auth
	cfg.Contexts["limited"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: LimitedUser}
	cfg.CurrentContext = "limited"
	path := filepath.Join(tb.TempDir(), "limited.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		tb.Fatalf("writing the limited kubeconfig: %v", err)
	}
	return path
}

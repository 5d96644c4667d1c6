package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// These tests run the real binaries (built here with go build) against a
// real API server started by hack/testenv.sh, exactly as `make run` does.
// They skip when the API server binaries are not installed, and fail then
// when CI=true.

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeChildEnv) == "1" {
		fakeChild() // this binary plays an agent or the core for fleet_ports_test.go
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds agent, core and sandbox once per test binary.
func binaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := kubetest.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "kubecrew-sandbox-bin-"); binErr != nil {
			return
		}
		for _, b := range []struct{ dir, pkg, out string }{
			{"services/agent", ".", "agent"},
			{"services/core", ".", "core"},
			{"services/agent", "./cmd/sandbox", "sandbox"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			cmd.Dir = filepath.Join(root, b.dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s in %s: %v\n%s", b.pkg, b.dir, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// testTier is the sandbox tier under test: KUBECREW_SANDBOX_TIER, as
// `make run` reads it.
func testTier(t *testing.T) string {
	t.Helper()
	tier, err := ParseTier(os.Getenv(TierEnv))
	if err != nil {
		t.Fatal(err)
	}
	return tier
}

func needTestenv(t *testing.T) {
	t.Helper()
	tier := testTier(t)
	if TestenvInstalled(os.Getenv, tier) {
		return
	}
	msg := "sandbox end-to-end test skipped: the " + tier + " tier's binaries are not installed; run `hack/testenv.sh install` (~10 min first time)"
	if tier == TierSim {
		msg += " with WITH_KCM=1 WITH_SCHEDULER=1 WITH_KWOK=1"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: failing instead of skipping)")
	}
	t.Skip(msg)
}

// testEnviron is this process's environment minus what would change the
// demo: a model endpoint (the test checks the deterministic loop) and a
// kubeconfig (the sandbox must start its own cluster); plus the token.
func testEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LLM_BASE_URL", "LLM_FALLBACK_BASE_URL", "AGENT_MODEL", "KUBECONFIG", "KUBECREW_ALLOW_ACTIONS", "AUTH_TOKEN":
			continue
		}
		out = append(out, kv)
	}
	// The sandbox binary's fleet takes this process's token, which the
	// test's requests send (Token).
	return append(out, "AUTH_TOKEN="+Token())
}

// The whole loop, headless, and each step checked on the live services
// themselves (not on what the sandbox printed) before the fleet stops.
func TestHeadlessIncidentReachesMerged(t *testing.T) {
	needTestenv(t)
	bin := binaries(t)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	var out bytes.Buffer
	ctx := context.Background()
	checked := false
	// The core posts the investigation to a chat receiver of the test's
	// own; a routes file lets the fixture namespace post (the built-in
	// routes keep it quiet).
	hook := newChatHook(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  agent: platform-sre\n  notify: [webhook]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{
		Root: root, BinDir: bin, RunDir: runDir, Headless: true, CorePort: 0, AgentPort: 0,
		Timeout: 3 * time.Minute, Environ: testEnviron(), Tier: testTier(t),
		CoreEnv: map[string]string{"REPORT_WEBHOOK_URL": hook.srv.URL + "/hook", "ROUTES_FILE": routes, "NOTIFY_SETTLE": "60s"},
		AfterIncident: func(f *Fleet, oc *Outcome, ierr error) {
			checked = true
			if ierr != nil {
				t.Errorf("incident: %v", ierr)
				return
			}
			checkLiveLoop(t, f, oc, filepath.Join(runDir, "gitops.git"), "apps/"+FixtureNamespace+"/broken-workloads.yaml")
			checkChatPost(t, hook, oc)
		},
	}
	start := time.Now()
	err = Run(ctx, ctx, o, &out)
	t.Logf("sandbox output:\n%s", out.String())
	if err != nil {
		t.Fatalf("Run (headless) = %v, want nil (merged)", err)
	}
	if !checked {
		t.Fatal("the incident never ran")
	}
	t.Logf("headless run, cluster start to merged and everything stopped: %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"core decided: dispatched to platform-sre", "opened PR #1", "+1/−1", "reviewed PR #1: approve", "is merged into main"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	assertAllGone(t, runDir)
}

// chatHook is a generic JSON chat webhook on the wire.
type chatHook struct {
	mu    sync.Mutex
	posts []map[string]any
	srv   *httptest.Server
}

func newChatHook(t *testing.T) *chatHook {
	h := &chatHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		h.mu.Lock()
		h.posts = append(h.posts, m)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *chatHook) snapshot() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.posts...)
}

// checkChatPost: the investigation reaches chat exactly once, with the
// findings by severity, the PR and its link, and the review.
func checkChatPost(t *testing.T, h *chatHook, oc *Outcome) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for len(h.snapshot()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling the receiver with a deadline
	}
	posts := h.snapshot()
	if len(posts) != 1 {
		t.Fatalf("the core posted %d times, want exactly 1: %v", len(posts), posts)
	}
	text, _ := posts[0]["text"].(string)
	for _, want := range []string{
		"Alert KubePodOOMKilled in " + FixtureNamespace,
		"🔴 " + FixtureNamespace + "/Deployment/" + IncidentWorkload + " (app) — OOMKilled",
		"PR: file://", "#pull/1",
		"Review: code-reviewer — approve",
		"Investigation " + oc.Decision.InvestigationID,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the chat post lacks %q:\n%s", want, text)
		}
	}
	if posts[0]["thread"] != "investigation/"+oc.Decision.InvestigationID {
		t.Errorf("thread = %v", posts[0]["thread"])
	}
}

func checkLiveLoop(t *testing.T, f *Fleet, oc *Outcome, repo, path string) {
	t.Helper()
	ctx := context.Background()
	// 1. the core's decision
	if oc.Decision.Decision != "dispatched" || oc.Decision.Agent != "platform-sre" || oc.Decision.InvestigationID == "" {
		t.Fatalf("decision = %+v, want dispatched to platform-sre", oc.Decision)
	}
	var decisions struct {
		Items []api.AlertDecision `json:"items"`
	}
	if code, err := GetJSON(ctx, f.Core+"/api/v1/alerts", &decisions); err != nil || code != 200 {
		t.Errorf("GET /api/v1/alerts = %d %v", code, err)
	} else if len(decisions.Items) != 1 || decisions.Items[0].Decision != "dispatched" || decisions.Items[0].Alertname != "KubePodOOMKilled" {
		t.Errorf("core's recorded decisions = %+v", decisions.Items)
	}
	// 2. the investigation and its findings, as the core recorded them
	var inv api.Investigation
	if code, err := GetJSON(ctx, f.Core+"/api/v1/investigations/"+oc.Decision.InvestigationID, &inv); err != nil || code != 200 {
		t.Fatalf("GET investigation = %d %v", code, err)
	}
	if inv.Status != api.StatusCompleted || inv.Agent != "platform-sre" || inv.RunID == "" {
		t.Errorf("investigation = %+v", inv)
	}
	var oom *api.Finding
	names := map[string]bool{}
	for i, fd := range inv.Findings {
		names[fd.Name] = true
		if fd.Name == IncidentWorkload && fd.Reason == "OOMKilled" {
			oom = &inv.Findings[i]
		}
	}
	if oom == nil || oom.Severity != api.SeverityCritical || oom.Namespace != FixtureNamespace || !oom.Remediable {
		t.Errorf("findings lack a critical remediable oomkill OOMKilled in %s: %+v", FixtureNamespace, inv.Findings)
	}
	for _, fx := range kubetest.Fixtures {
		if (fx.Reason != "") != names[fx.Name] {
			t.Errorf("fixture %s: reported=%v, want %v", fx.Name, names[fx.Name], fx.Reason != "")
		}
	}
	// 3. Noor's run and its delegation
	noorRun, err := GetRun(ctx, f.URL("noor"), inv.RunID)
	if err != nil {
		t.Fatal(err)
	}
	d := noorRun.Delegation
	if d == nil || d.To != "k8s-engineer" || !d.Sent || d.Error != "" || d.RunID == "" || d.Finding.Name != IncidentWorkload {
		t.Fatalf("Noor's delegation = %+v", d)
	}
	// 4. both sides of the A2A audit log hold the instruction
	instruction := "Fix Deployment " + FixtureNamespace + "/" + IncidentWorkload
	sent := findAudit(ctx, f.URL("noor"), func(a a2a.AuditItem) bool {
		return a.Direction == "sent" && a.Verb == "delegate" && a.Callee == "k8s-engineer" && a.CallerRunID == inv.RunID
	})
	received := findAudit(ctx, f.URL("sol"), func(a a2a.AuditItem) bool {
		return a.Direction == "received" && a.Verb == "delegate" && a.Caller == "platform-sre" && a.CalleeRunID == d.RunID
	})
	if sent == nil || !strings.Contains(sent.Text, instruction) {
		t.Errorf("Noor's /a2a/log lacks the sent delegation %q: %+v", instruction, sent)
	}
	if received == nil || !strings.Contains(received.Text, instruction) {
		t.Errorf("Sol's /a2a/log lacks the received delegation %q: %+v", instruction, received)
	}
	// 5. Sol's PR: one, on the finding's branch, +1/-1, 32Mi → 48Mi
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	prs, err := forge.ListPRs(ctx, "all")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Author != "k8s-engineer" || prs[0].Branch != "agent/fix/"+d.Finding.Key {
		t.Fatalf("PRs = %+v", prs)
	}
	diff, err := forge.Diff(ctx, prs[0].Number)
	if err != nil {
		t.Fatal(err)
	}
	if p, m := gitops.CountChanged(diff); p != 1 || m != 1 || !strings.Contains(diff, "-              memory: 32Mi") || !strings.Contains(diff, "+              memory: 48Mi") {
		t.Errorf("diff is not +1/-1 32Mi → 48Mi:\n%s", diff)
	}
	// 6. Vera's review, and the merge
	reviews, err := forge.Reviews(ctx, prs[0].Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(reviews) != 1 || reviews[0].Reviewer != "code-reviewer" || reviews[0].Verdict != "approve" {
		t.Errorf("reviews = %+v", reviews)
	}
	if prs[0].State != "merged" || !oc.Merged {
		t.Errorf("PR state %q, outcome merged=%v", prs[0].State, oc.Merged)
	}
	onMain, err := forge.ReadFile(ctx, path)
	if err != nil || !strings.Contains(string(onMain), "memory: 48Mi") || strings.Contains(string(onMain), "memory: 32Mi") {
		t.Errorf("main's %s does not hold the new limit (err %v)", path, err)
	}
	// 7. the report pages: Noor's run with its timeline, and the core's
	// investigation report following the chain to Sol and Vera
	for _, c := range []struct {
		url  string
		want []string
	}{
		{f.URL("noor") + "/runs/" + inv.RunID + "/report", []string{"Timeline (", "cluster_problems", "a2a_send", "kubecrew-fixtures/Deployment/oomkill"}},
		{f.Core + "/api/v1/investigations/" + inv.ID + "/report", []string{"Outcome: merged — PR #1 merged by code-reviewer", "git --git-dir=", "platform-sre — run", "k8s-engineer — run", "code-reviewer — run", "bump_workload_memory", "merge_if_trivial"}},
	} {
		page, code := pageOf(ctx, c.url)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d", c.url, code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q", c.url, w)
			}
		}
	}
}

// pageOf GETs url and returns the body and status (0 on a transport error).
func pageOf(ctx context.Context, url string) (string, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0
	}
	setAuth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// interactive is the sandbox binary running as `make run` runs it.
type interactive struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	out     bytes.Buffer
	stderr  bytes.Buffer
	done    chan error
	running chan struct{}
}

func (r *interactive) stdout() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// startInteractive starts bin/sandbox and waits until the fleet is up.
func startInteractive(t *testing.T, bin, runDir string, env []string) *interactive {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := &interactive{done: make(chan error, 1), running: make(chan struct{})}
	r.cmd = exec.Command(filepath.Join(bin, "sandbox"), "-bin", bin, "-dir", runDir, "-core-port", "0", "-agent-port", "0", "-timeout", "3m")
	r.cmd.Dir = root
	r.cmd.Env = env
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			r.mu.Lock()
			r.out.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if strings.Contains(sc.Text(), "Ctrl-C stops everything") {
				once.Do(func() { close(r.running) })
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		r.done <- r.cmd.Wait()
	}()
	select {
	case <-r.running:
	case err := <-r.done:
		t.Fatalf("sandbox exited before the fleet was up: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout(), r.stderr.String())
	case <-time.After(4 * time.Minute):
		t.Fatalf("fleet not up after 4 minutes:\n%s", r.stdout())
	}
	return r
}

// interrupt sends Ctrl-C (SIGINT) and waits for a clean exit.
func (r *interactive) interrupt(t *testing.T) {
	t.Helper()
	start := time.Now()
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("sandbox exit after Ctrl-C = %v, want 0\nstderr:\n%s", err, r.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("sandbox still running 60s after Ctrl-C")
	}
	t.Logf("Ctrl-C to exit: %s", time.Since(start).Round(time.Millisecond))
}

// Ctrl-C (SIGINT) on the interactive sandbox stops every process it
// started: agents, core, etcd and kube-apiserver.
func TestCtrlCLeavesNothingBehind(t *testing.T) {
	needTestenv(t)
	bin := binaries(t)
	runDir := t.TempDir()
	r := startInteractive(t, bin, runDir, testEnviron())
	pids := readPIDs(t, runDir)
	procs := []string{"etcd", "kube-apiserver", "core", "noor", "sol", "vera", "dax", "ada"}
	if testTier(t) == TierSim {
		procs = append(procs, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	for _, want := range procs {
		if pid, ok := pids[want]; !ok || !alive(pid) {
			t.Errorf("%s: pid %d recorded=%v alive=%v before Ctrl-C", want, pid, ok, ok && alive(pid))
		}
	}
	if !strings.Contains(r.stdout(), "is merged into main") {
		t.Errorf("the interactive run did not reach merged:\n%s", r.stdout())
	}
	r.interrupt(t)
	assertAllGone(t, runDir)
}

// With KUBECONFIG set the fleet runs on that cluster read-only: nothing is
// loaded into it, no incident, Sol has neither k8s_rollout nor a GitOps
// repository, and Ctrl-C stops the fleet but never the user's cluster.
func TestReadOnlyOnUsersCluster(t *testing.T) {
	needTestenv(t)
	bin := binaries(t)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	users, err := StartSandbox(ctx, root, filepath.Join(t.TempDir(), "users-cluster"), TierAPI, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { users.Stop(io.Discard) })
	runDir := t.TempDir()
	r := startInteractive(t, bin, runDir, append(testEnviron(), "KUBECONFIG="+users.Kubeconfig))
	out := r.stdout()
	for _, want := range []string{"READ-ONLY", "no fixtures are loaded and no incident is driven"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "core decided") || strings.Contains(out, "testenv:") {
		t.Errorf("read-only mode started a cluster or drove an incident:\n%s", out)
	}
	sol := urlOf(t, out, "sol")
	var info struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if code, err := GetJSON(ctx, sol+"/info", &info); err != nil || code != 200 {
		t.Fatalf("GET sol /info = %d %v", code, err)
	}
	var names []string
	for _, tl := range info.Tools {
		names = append(names, tl.Name)
	}
	for _, banned := range []string{"k8s_rollout", "bump_workload_memory"} {
		if slicesContains(names, banned) {
			t.Errorf("Sol has %s on a read-only cluster: %v", banned, names)
		}
	}
	if !slicesContains(names, "k8s_get_resources") {
		t.Errorf("Sol lost his read tools: %v", names)
	}
	var ready map[string]any
	if _, err := GetJSON(ctx, sol+"/ready", &ready); err != nil || !strings.HasPrefix(fmt.Sprint(ready["gitops"]), "not configured") {
		t.Errorf("Sol's gitops = %v (%v), want not configured", ready["gitops"], err)
	}
	cs, err := Clientset(users.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, FixtureNamespace, metav1.GetOptions{}); err == nil {
		t.Errorf("read-only mode created namespace %s on the user's cluster", FixtureNamespace)
	}
	if _, err := os.Stat(filepath.Join(runDir, "gitops.git")); err == nil {
		t.Errorf("read-only mode created a GitOps repository")
	}
	r.interrupt(t)
	assertAllGone(t, runDir)
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("the user's cluster does not answer after the sandbox stopped: %v", err)
	}
}

// urlOf finds persona's URL in the "fleet is running" line.
func urlOf(t *testing.T, out, persona string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, "the fleet is running") {
			continue
		}
		i := strings.Index(l, " "+persona+" http://")
		if i < 0 {
			break
		}
		u := l[i+len(persona)+2:]
		if j := strings.IndexAny(u, ", "); j >= 0 {
			u = u[:j]
		}
		return u
	}
	t.Fatalf("no URL for %s in:\n%s", persona, out)
	return ""
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// assertAllGone: every process the sandbox recorded is gone, and no
// process mentions the run directory (pgrep -f).
func assertAllGone(t *testing.T, runDir string) {
	t.Helper()
	for name, pid := range readPIDs(t, runDir) {
		if alive(pid) {
			t.Errorf("%s (pid %d) is still running after the sandbox stopped", name, pid)
		}
	}
	out, err := exec.Command("pgrep", "-af", runDir).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Errorf("processes still mention %s:\n%s", runDir, out)
	case errors.As(err, &ee) && ee.ExitCode() == 1: // nothing matched
	default:
		t.Logf("pgrep unavailable (%v); the pid check above stands alone", err)
	}
}

func readPIDs(t *testing.T, runDir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "pids"))
	if err != nil {
		t.Fatalf("the sandbox recorded no pids: %v", err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var name string
		var pid int
		if _, err := fmt.Sscanf(l, "%s %d", &name, &pid); err == nil {
			out[name] = pid
		}
	}
	return out
}

// alive: the process exists and is not a zombie awaiting its reaper.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

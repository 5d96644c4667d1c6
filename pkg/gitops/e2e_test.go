package gitops

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// The GitOps repository of the end-to-end tests: the oomkill fixture in a
// directory no convention names (found by scanning), two other apps, and a
// decoy with the same name in another namespace.
func e2eRepo(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"fixtures/kubecrew/oomkill.yaml":      readTestdata(t, "bump/oomkill.yaml"),
		"apps/base/api/deployment.yaml":       readTestdata(t, "bump/block.yaml"),
		"apps/cache-warmer/cronjob.yaml":      readTestdata(t, "bump/blockscalar.yaml"),
		"staging/oomkill/deployment.yaml":     []byte(strings.Replace(string(readTestdata(t, "bump/oomkill.yaml")), "namespace: kubecrew-fixtures", "namespace: staging", 1)),
		"clusters/home/flux-system/gotk.yaml": []byte("kind: Kustomization\n"),
		"README.md":                           []byte("# gitops\n"),
	}
}

var oomFinding = api.Finding{Severity: api.SeverityHigh, Kind: "Deployment", Namespace: "kubecrew-fixtures", Name: "oomkill",
	Container: "app", Reason: "OOMKilled", Detail: "Container app was OOMKilled 293 times in 26h (exit 137).", Remediable: true}

type agentTools struct {
	t   *testing.T
	set tools.Set
}

func newAgent(t *testing.T, f Forge, me string, opts Options) agentTools {
	return agentTools{t: t, set: tools.Set(Tools(f, me, opts))}
}

// call runs a tool the way the agent loop does: JSON arguments in, text out.
func (a agentTools) call(name string, args any) string {
	a.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		a.t.Fatal(err)
	}
	return a.set.Call(context.Background(), name, raw, 0).Output
}

func mustContain(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Fatalf("output lacks %q:\n%s", s, out)
		}
	}
}

func bumpArgsFor(f api.Finding) map[string]any {
	return map[string]any{"namespace": f.Namespace, "kind": f.Kind, "name": f.Name, "container": f.Container,
		"finding_key": f.DeriveKey(), "reason": f.Detail}
}

// The loop on the local forge: Sol proposes, Vera reviews, merge_if_trivial
// merges; hand-made PRs that are not the trivial shape stay open.
func TestEndToEndLocal(t *testing.T) {
	t.Parallel()
	files := e2eRepo(t)
	l, dir, clk := newLocalRepo(t, files)
	reg := prometheus.NewRegistry()
	opts := Options{Now: clk.Now, Metrics: NewMetrics(reg)}
	sol := newAgent(t, l, "k8s-engineer", opts)
	vera := newAgent(t, l, "code-reviewer", opts)
	ctx := context.Background()

	out := sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding))
	mustContain(t, out, "Opened PR #1", "branch: agent/fix/kubecrew-fixtures-deployment-oomkill-app-oomkilled",
		"file: fixtures/kubecrew/oomkill.yaml (found by scan", "32Mi -> 48Mi", "-              memory: 32Mi\n+              memory: 48Mi\n")
	pr, _ := l.GetPR(ctx, 1)
	if FindingKeyOf(pr.Body) != oomFinding.DeriveKey() || !strings.Contains(pr.Body, "293 times") {
		t.Errorf("PR body:\n%s", pr.Body)
	}
	d, _ := l.Diff(ctx, 1)
	if strings.Count(d, "\n-") != 2 || strings.Count(d, "\n+") != 2 {
		t.Errorf("diff is not +1/-1:\n%s", d)
	}
	if got := testutil.ToFloat64(opts.Metrics.opened); got != 1 {
		t.Errorf("prs_opened_total = %v", got)
	}

	// Same finding again: the same PR, nothing new.
	out = sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding))
	mustContain(t, out, "already open", "PR #1")
	if prs, _ := l.ListPRs(ctx, ""); len(prs) != 1 {
		t.Fatalf("%d PRs after a repeated call", len(prs))
	}

	// Sol cannot review or merge his own PR; nobody can merge it unapproved.
	mustContain(t, sol.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve"}), "ERROR", "you; the proposer never reviews")
	mustContain(t, sol.call(ToolMergeIfTrivial, map[string]any{"number": 1}), "ERROR", "never merges its own PR")
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": 1}), "NOT MERGED", "no approval by an agent other than the author")

	// Vera reads it; the deterministic review approves.
	out = vera.call(ToolGetPR, map[string]any{"number": 1})
	mustContain(t, out, "author: k8s-engineer", "suggested verdict: approve", "1. diff matches the body — PASS", "2. a bigger limit is the right fix — PASS")
	if strings.Contains(out, TruncatedBanner) {
		t.Fatal("a small diff was shown truncated")
	}
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "comment", "body": "ok"}), "ERROR", "needs a reason")
	clk.Advance(time.Minute)
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve", "body": "All five checks pass."}), "Review submitted on PR #1")
	clk.Advance(time.Minute)
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": 1}), "MERGED PR #1", "32Mi -> 48Mi")
	onMain, _ := l.ReadFile(ctx, "fixtures/kubecrew/oomkill.yaml")
	if !strings.Contains(string(onMain), "              memory: 48Mi\n") || strings.Contains(string(onMain), "memory: 32Mi") {
		t.Errorf("main after merge:\n%s", onMain)
	}
	if gitOut(t, dir, "show", "main:staging/oomkill/deployment.yaml") != strings.TrimSpace(string(files["staging/oomkill/deployment.yaml"])) {
		t.Error("the decoy in another namespace changed")
	}
	if got := testutil.ToFloat64(opts.Metrics.merges.WithLabelValues("merged")); got != 1 {
		t.Errorf("merged = %v", got)
	}

	// The next sweep still sees the OOMKill (the fix has not rolled out):
	// no second raise on top of the merged one until the settle window ends.
	mustContain(t, sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding)), "ERROR", "#1", "has been merged", "settle window")
	if prs, _ := l.ListPRs(ctx, ""); len(prs) != 1 {
		t.Fatalf("%d PRs inside the settle window", len(prs))
	}

	// Hand-made PRs: a 3× bump, and a second changed line. Both approved by
	// Vera; neither merges.
	base := string(readTestdata(t, "bump/block.yaml"))
	threeX := strings.Replace(base, "memory: 256Mi   #", "memory: 768Mi   #", 1)
	p3, err := l.OpenPR(ctx, "agent/fix/hand-3x", "apps/base/api/deployment.yaml", []byte(threeX), "raise api 3x", "change: 256Mi -> 768Mi\nproposed-by: k8s-engineer\nfinding-key: hand-3x", "k8s-engineer")
	if err != nil {
		t.Fatal(err)
	}
	twoLines := strings.Replace(strings.Replace(base, "memory: 256Mi   #", "memory: 384Mi   #", 1), `cpu: "1"`, `cpu: "4"`, 1)
	p2, err := l.OpenPR(ctx, "agent/fix/hand-2lines", "apps/base/api/deployment.yaml", []byte(twoLines), "raise api", "change: 256Mi -> 384Mi\nproposed-by: k8s-engineer\nfinding-key: hand-2lines", "k8s-engineer")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{p3.Number, p2.Number} {
		mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": n, "verdict": "approve", "body": "fine"}), "Review submitted")
	}
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": p3.Number}), "NOT MERGED", "3.00×")
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": p2.Number}), "NOT MERGED", "removes 2 and adds 2")
	for _, n := range []int{p3.Number, p2.Number} {
		if p, _ := l.GetPR(ctx, n); p.State != StateOpen {
			t.Errorf("#%d is %s; want it left open", n, p.State)
		}
	}
	// ...and Vera's own checks would not have approved them.
	v3 := vera.call(ToolGetPR, map[string]any{"number": p3.Number})
	mustContain(t, v3, "suggested verdict: request_changes", "3. the size is proportionate — FAIL")
	v2 := vera.call(ToolGetPR, map[string]any{"number": p2.Number})
	mustContain(t, v2, "suggested verdict: request_changes", "1. diff matches the body — FAIL")
	if got := testutil.ToFloat64(opts.Metrics.merges.WithLabelValues("refused")); got != 3 {
		t.Errorf("refused = %v", got)
	}

	// Human branches are out of reach; an agent without identity is refused.
	ph, _ := l.OpenPR(ctx, "renovate/busybox", "apps/base/api/deployment.yaml", []byte(threeX), "bump busybox", "", "renovate[bot]")
	for _, name := range []string{ToolGetPR, ToolMergeIfTrivial} {
		mustContain(t, vera.call(name, map[string]any{"number": ph.Number}), "ERROR", "only agent PRs")
	}
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": ph.Number, "verdict": "comment", "body": "This is not an agent pull request at all."}), "ERROR", "only agent PRs")
	anon := newAgent(t, l, "  ", opts)
	for _, c := range []struct {
		name string
		args any
	}{
		{ToolReviewPR, map[string]any{"number": p3.Number, "verdict": "request_changes", "body": "The bump is three times the old limit, too large."}},
		{ToolMergeIfTrivial, map[string]any{"number": p3.Number}},
		{ToolBumpWorkloadMemory, bumpArgsFor(oomFinding)},
	} {
		mustContain(t, anon.call(c.name, c.args), "ERROR", "no identity")
	}
	// list_agent_prs shows agent PRs only.
	out = vera.call(ToolListAgentPRs, map[string]any{"state": "all"})
	mustContain(t, out, "#1 [merged]", "#2 [open]", "#3 [open]")
	if strings.Contains(out, "renovate") {
		t.Errorf("a human PR was listed:\n%s", out)
	}
}

func TestBumpToolCapAndStale(t *testing.T) {
	t.Parallel()
	l, _, clk := newLocalRepo(t, e2eRepo(t))
	reg := prometheus.NewRegistry()
	opts := Options{Now: clk.Now, Metrics: NewMetrics(reg), MaxOpenPRs: 2, StaleAfter: 7 * 24 * time.Hour}
	svc := NewService(l, "k8s-engineer", opts)
	ctx := context.Background()
	for i, k := range []string{"old-one", "old-two"} {
		if _, err := l.OpenPR(ctx, "agent/fix/"+k, "README.md", []byte("x"+k), "t", "b", "k8s-engineer"); err != nil {
			t.Fatal(err, i)
		}
	}
	// At the cap: refused, with the PRs named.
	_, err := svc.ProposeMemoryBump(ctx, BumpRequest{Namespace: "web", Kind: "Deployment", Name: "api", Container: "api"})
	if err == nil || !strings.Contains(err.Error(), "2 agent PRs are open and not stale (cap 2)") {
		t.Fatalf("at the cap: %v", err)
	}
	// Eight days later they are stale: surfaced and metered, and no longer
	// blocking.
	clk.Advance(8 * 24 * time.Hour)
	stale, findings, err := svc.StalePRs(ctx)
	if err != nil || len(stale) != 2 || len(findings) != 2 {
		t.Fatalf("StalePRs = %v %v %v", stale, findings, err)
	}
	f := findings[0]
	if f.Kind != "PullRequest" || f.Reason != "StalePullRequest" || f.Key == "" || !strings.Contains(f.Detail, "8 days") || !api.ValidSeverity(f.Severity) {
		t.Errorf("finding %+v", f)
	}
	if got := testutil.ToFloat64(opts.Metrics.stale); got != 2 {
		t.Errorf("kubecrew_gitops_stale_prs = %v", got)
	}
	r, err := svc.ProposeMemoryBump(ctx, BumpRequest{Namespace: "web", Kind: "Deployment", Name: "api", Container: "api"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "apps/base/api/deployment.yaml" || r.How != "convention apps/base/api/" || len(r.Stale) != 2 || r.Old != "256Mi" || r.New != "384Mi" {
		t.Errorf("result %+v", r)
	}
	out := newAgent(t, l, "code-reviewer", opts).call(ToolListAgentPRs, map[string]any{})
	mustContain(t, out, "old-one", "STALE: needs a person")
}

func TestBumpToolRefusals(t *testing.T) {
	t.Parallel()
	l, _, clk := newLocalRepo(t, e2eRepo(t))
	sol := newAgent(t, l, "sol", Options{Now: clk.Now})
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"namespace": "kubecrew", "kind": "Deployment", "name": "agent-platform-sre", "container": "agent"}, "fleet itself"},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "nope", "container": "x"}, "no YAML file in the repository defines Deployment nope"},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "api", "container": "sidecar"}, `no container named "sidecar"`},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "api", "container": "api", "factor": 3}, "at most 2×"},
		{map[string]any{"namespace": "web", "kind": "Service", "name": "api", "container": "api"}, "pod template"},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "api", "container": "api", "finding_key": "../../main"}, "may hold only"},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "api"}, "required"},
		{map[string]any{"namespace": "web", "kind": "Deployment", "name": "api", "container": "api", "bogus": 1}, "invalid arguments"},
	}
	for _, c := range tests {
		mustContain(t, sol.call(ToolBumpWorkloadMemory, c.args), "ERROR", c.want)
	}
	if prs, _ := l.ListPRs(context.Background(), ""); len(prs) != 0 {
		t.Errorf("a refused call opened %d PRs", len(prs))
	}
}

// The same loop against GitHub's REST API (an httptest server speaking its
// shapes), asserting the exact calls in order.
func TestEndToEndGitHub(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range e2eRepo(t) {
		files[k] = string(v)
	}
	fake, solF, veraF, clk := newGitHubPair(t, files)
	opts := Options{Now: clk.Now}
	sol := newAgent(t, solF, "k8s-engineer", opts)
	vera := newAgent(t, veraF, "code-reviewer", opts)
	const R = "/repos/acme/gitops/"
	listOpen := "GET " + R + "pulls?base=main&direction=asc&per_page=100&sort=created&state=open"
	mainSHA := fake.branches["main"]

	out := sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding))
	mustContain(t, out, "Opened PR #1", "https://github.example/acme/gitops/pull/1", "-              memory: 32Mi\n+              memory: 48Mi\n")
	assertCalls(t, fake,
		listOpen,
		"GET "+R+"pulls?base=main&direction=asc&per_page=100&sort=created&state=closed", // merged ones: the settle window
		"GET "+R+"git/trees/main?recursive=1",
		"GET "+R+"contents/fixtures/kubecrew/oomkill.yaml?ref=main", // path names the workload: read first
		"GET "+R+"contents/staging/oomkill/deployment.yaml?ref=main",
		"GET "+R+"pulls?head=acme%3Aagent%2Ffix%2Fkubecrew-fixtures-deployment-oomkill-app-oomkilled&per_page=10&state=open",
		"GET "+R+"git/ref/heads/main",
		"GET "+R+"contents/fixtures/kubecrew/oomkill.yaml?ref="+mainSHA,
		"POST "+R+"git/refs",
		"PUT "+R+"contents/fixtures/kubecrew/oomkill.yaml",
		"POST "+R+"pulls",
		"GET "+R+"pulls/1",
	)
	out = sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding))
	mustContain(t, out, "already open", "PR #1")
	assertCalls(t, fake, listOpen, "GET "+R+"pulls/1")

	out = vera.call(ToolGetPR, map[string]any{"number": 1})
	mustContain(t, out, "author: k8s-engineer", "suggested verdict: approve")
	assertCalls(t, fake,
		"GET "+R+"pulls/1",
		"GET "+R+"pulls/1/reviews?per_page=100",
		"GET "+R+"pulls/1",
		"GET "+R+"contents/fixtures/kubecrew/oomkill.yaml?ref=main",
	)
	clk.Advance(time.Minute)
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve", "body": "All five checks pass."}), "Review submitted")
	// An approval asks once which account Vera acts as (GET /user): not
	// the PR's opener, so GitHub takes it.
	assertCalls(t, fake, "GET "+R+"pulls/1", "GET "+R+"pulls/1", "GET /user", "POST "+R+"pulls/1/reviews")
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": 1}), "MERGED PR #1")
	assertCalls(t, fake,
		"GET "+R+"pulls/1",
		"GET "+R+"pulls/1",
		"GET "+R+"pulls/1/reviews?per_page=100",
		"GET "+R+"contents/fixtures/kubecrew/oomkill.yaml?ref=main",
		"GET "+R+"pulls/1", // mergeable_state: protection is honoured before the merge
		"PUT "+R+"pulls/1/merge",
	)
	if got, _ := fake.file("main", "fixtures/kubecrew/oomkill.yaml"); !strings.Contains(got, "memory: 48Mi") {
		t.Errorf("main after merge:\n%s", got)
	}
	// The review carries Vera's identity and was pinned to the head commit.
	fake.mu.Lock()
	rv := fake.prs[0].Reviews[0]
	fake.mu.Unlock()
	if rv.User != "kubecrew-vera" || !strings.HasSuffix(rv.Body, "reviewed-by: code-reviewer") || rv.Commit == "" {
		t.Errorf("review %+v", rv)
	}
}

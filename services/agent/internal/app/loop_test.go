package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// fleet starts the named personas on loopback, wired to each other.
func fleet(t *testing.T, common map[string]string, names ...string) map[string]string {
	t.Helper()
	ls := map[string]net.Listener{}
	var peers []string
	urls := map[string]string{}
	for _, n := range names {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[n] = l
		urls[n] = "http://" + l.Addr().String()
		peers = append(peers, n+"="+urls[n])
	}
	for _, n := range names {
		env := map[string]string{"AGENT_PERSONA": n, "AGENT_PEERS": strings.Join(peers, ",")}
		for k, v := range common {
			env[k] = v
		}
		cfg, err := config.Load(envOf(env), app.LoadPersona)
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.New(context.Background(), cfg, app.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(a.Server)
		srv.Listener.Close()
		srv.Listener = ls[n]
		srv.Start()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = a.Shutdown(ctx)
			srv.Close()
		})
	}
	return urls
}

func TestDetectFixReviewLoopOnFixtures(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	ns := fmt.Sprintf("kc-loop-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(ctx, ns); err != nil {
		t.Fatal(err)
	}
	repo := fixturesRepo(t)
	urls := fleet(t, map[string]string{"KUBECONFIG": env.Kubeconfig, "GITOPS_FORGE": "local", "GITOPS_REPO": repo},
		"noor", "sol", "vera")

	code, body := do(t, "POST", urls["noor"]+"/run", fmt.Sprintf(`{"task":"Sweep the cluster","context":{"namespace":%q}}`, ns))
	if code != 200 {
		t.Fatalf("noor /run = %d %s", code, body)
	}
	var res api.RunResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	// The six broken fixtures, most severe first; the healthy one absent.
	names := map[string]bool{}
	last := -1
	for _, f := range res.Findings {
		names[f.Name] = true
		if r := api.SeverityRank(f.Severity); r < last {
			t.Errorf("findings not sorted by severity: %+v", res.Findings)
		} else {
			last = r
		}
	}
	for _, w := range []string{"configerror", "crashloop", "imagepull", "notready", "unschedulable", "oomkill"} {
		if !names[w] {
			t.Errorf("fixture %s not found; findings: %+v", w, res.Findings)
		}
	}
	if names["healthy"] {
		t.Errorf("the healthy workload was reported")
	}
	d := res.Delegation
	if d == nil || d.To != "k8s-engineer" || !d.Sent || d.Error != "" || (d.Finding.Name != "oomkill" && d.Finding.Name != "crashloop") {
		t.Fatalf("delegation = %+v", d)
	}
	if d.Finding.Name != "oomkill" {
		t.Skipf("delegated %s; the rest of the loop follows the oomkill finding", d.Finding.Name)
	}

	// Sol opened one PR (+1/-1) and told Vera; Vera reviewed and merged it.
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	var prs []gitops.PR
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		prs, _ = forge.ListPRs(ctx, "all")
		if len(prs) == 1 && prs[0].State == "merged" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(prs) != 1 || prs[0].State != "merged" || prs[0].Author != "k8s-engineer" || !strings.HasPrefix(prs[0].Branch, "agent/fix/") {
		t.Fatalf("PRs = %+v", prs)
	}
	diff, err := forge.Diff(ctx, prs[0].Number)
	if err != nil {
		t.Fatal(err)
	}
	if plus, minus := gitops.CountChanged(diff); plus != 1 || minus != 1 || !strings.Contains(diff, "-              memory: 32Mi") || !strings.Contains(diff, "+              memory: 48Mi") {
		t.Errorf("diff is not +1/-1 32Mi→48Mi:\n%s", diff)
	}
	reviews, _ := forge.Reviews(ctx, prs[0].Number)
	if len(reviews) != 1 || reviews[0].Reviewer != "code-reviewer" || reviews[0].Verdict != "approve" {
		t.Errorf("reviews = %+v", reviews)
	}
	merged, _ := forge.ReadFile(ctx, "apps/fixtures/broken-workloads.yaml")
	if !strings.Contains(string(merged), "memory: 48Mi") {
		t.Errorf("main does not hold the new limit")
	}

	// Both audit logs hold the full instruction.
	for _, who := range []string{"noor", "sol"} {
		_, lb := do(t, "GET", urls[who]+"/a2a/log", "")
		if !strings.Contains(string(lb), "Fix Deployment "+ns+"/oomkill") {
			t.Errorf("%s's /a2a/log lacks the instruction: %s", who, lb)
		}
	}

	// A second identical sweep opens no second PR.
	code, body = do(t, "POST", urls["noor"]+"/run", fmt.Sprintf(`{"task":"Sweep again","context":{"namespace":%q}}`, ns))
	if code != 200 {
		t.Fatalf("second sweep = %d %s", code, body)
	}
	// The delegation is blocking: Sol's run is over when Noor answers.
	if prs, _ := forge.ListPRs(ctx, "all"); len(prs) != 1 {
		t.Errorf("a second sweep opened another PR inside the settle window: %+v", prs)
	}
	// And its verdict says so: Sol refused (the settle window), so Noor did
	// not "delegate" anything that was acted on.
	var again api.RunResult
	if err := json.Unmarshal(body, &again); err != nil {
		t.Fatal(err)
	}
	if d := again.Delegation; again.Verdict != api.VerdictDelegationRefused || d == nil || d.Verdict != api.VerdictRefused ||
		!strings.Contains(d.Result, "settle window") || !strings.Contains(again.Answer, "did not act (verdict refused") {
		t.Errorf("second sweep: verdict %q, delegation %+v; want delegation_refused with Sol's refusal and the settle window", again.Verdict, d)
	}
}

// fixturesRepo is a local GitOps repository holding the fixtures' manifests
// (hack/fixtures/broken-workloads.yaml) at apps/fixtures/.
func fixturesRepo(t *testing.T) string {
	t.Helper()
	manifests, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "hack", "fixtures", "broken-workloads.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "gitops")
	if err := gitops.InitLocalRepo(repo, map[string][]byte{"apps/fixtures/broken-workloads.yaml": manifests}); err != nil {
		t.Fatal(err)
	}
	return repo
}

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
)

// TestPRsOnTheWire: an agent's GET /prs is its forge's truth — the open
// agent PRs with their newest review, one a pulse opened as much as one a
// delegation did; with state=all also one a person merged on the forge;
// never a person's own PR; an agent with no repository says so.
func TestPRsOnTheWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := fixturesRepo(t)
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	open := func(branch, author string) gitops.PR {
		t.Helper()
		pr, err := forge.OpenPR(ctx, branch, "apps/"+strings.ReplaceAll(branch, "/", "-")+".yaml", []byte("x: 1\n"), "change "+branch, "why", author)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	delegated := open("agent/fix/shop-checkout-oomkilled", "k8s-engineer")
	pulse := open("agent/fix/batch-report-oomkilled", "k8s-engineer")
	merged := open("agent/fix/web-api-oomkilled", "k8s-engineer")
	open("alice/tweak", "alice")
	if err := forge.SubmitReview(ctx, delegated.Number, gitops.Review{Reviewer: "code-reviewer", Verdict: gitops.VerdictRequestChanges, Body: "more than the limit"}); err != nil {
		t.Fatal(err)
	}
	if err := forge.Merge(ctx, merged.Number, "merge"); err != nil { // a person, on the forge
		t.Fatal(err)
	}
	vera := start(t, map[string]string{"AGENT_PERSONA": "vera", "GITOPS_FORGE": "local", "GITOPS_REPO": repo, "CLUSTER_NAME": "eu-west"})
	list := func(query string) api.PRList {
		t.Helper()
		code, b := do(t, "GET", vera.url+"/prs"+query, "")
		var l api.PRList
		if err := json.Unmarshal(b, &l); code != 200 || err != nil {
			t.Fatalf("GET /prs%s = %d %s", query, code, b)
		}
		return l
	}
	show := func(l api.PRList) string {
		var out []string
		for _, p := range l.Items {
			s := fmt.Sprintf("#%d %s %s %s", p.Number, p.State, p.Author, p.Cluster)
			if p.Review != nil {
				s += " " + p.Review.Reviewer + ":" + p.Review.Verdict
			}
			out = append(out, s)
		}
		return strings.Join(out, "; ")
	}
	l := list("")
	if got, want := show(l), fmt.Sprintf("#%d open k8s-engineer eu-west code-reviewer:request_changes; #%d open k8s-engineer eu-west", delegated.Number, pulse.Number); got != want {
		t.Errorf("open PRs: %s\nwant: %s", got, want)
	}
	if !strings.HasPrefix(l.Forge, "local ") || l.Cluster != "eu-west" || l.AsOf.IsZero() {
		t.Errorf("list of %q in %q as of %s", l.Forge, l.Cluster, l.AsOf)
	}
	if got := show(list("?state=all&limit=5")); !strings.Contains(got, fmt.Sprintf("#%d merged k8s-engineer", merged.Number)) || strings.Contains(got, "alice") {
		t.Errorf("all PRs: %s", got)
	}
	for _, q := range []string{"?state=closed", "?limit=3", "?state=all&limit=0", "?state=all&limit=101"} {
		if code, b := do(t, "GET", vera.url+"/prs"+q, ""); code != 400 || !strings.Contains(string(b), "error") {
			t.Errorf("GET /prs%s = %d %s", q, code, b)
		}
	}
	noor := start(t, map[string]string{"AGENT_PERSONA": "noor"})
	code, b := do(t, "GET", noor.url+"/prs", "")
	if code != 200 || !strings.Contains(string(b), `"items":[]`) || !strings.Contains(string(b), `"forge":""`) {
		t.Errorf("an agent without a repository: %d %s", code, b)
	}
}

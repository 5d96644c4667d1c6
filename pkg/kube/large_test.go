package kube

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// checkLargeReport asserts the large-fixture contract: at most 8,000
// characters, every planted problem named with its owner (first reason),
// and no problem in the fixture's namespaces or nodes that was not planted.
func checkLargeReport(t testing.TB, r *ProblemReport, prefix string, planted []kubetest.Planted) (recall, falsePositives int) {
	t.Helper()
	out := r.Render()
	if n := utf8.RuneCountInString(out); n > DefaultProblemChars {
		t.Errorf("render is %d chars, want <= %d", n, DefaultProblemChars)
	}
	want := map[string][]string{}
	for _, p := range planted {
		want[p.Namespace+"/"+p.Kind+"/"+p.Name] = p.Reasons
		path := p.Kind + "/" + p.Name
		if p.Namespace != "" {
			path = p.Namespace + "/" + path
		}
		if !strings.Contains(out, " "+p.Reasons[0]+" "+path+" ") && !strings.Contains(out, " "+p.Reasons[0]+" "+path+"\n") {
			t.Errorf("planted %s %s not named in the render", p.Reasons[0], path)
		} else {
			recall++
		}
	}
	for _, p := range r.Problems {
		ours := strings.HasPrefix(p.Namespace, prefix+"-") || (p.Kind == "Node" && strings.HasPrefix(p.Name, prefix+"-"))
		if !ours {
			continue
		}
		reasons, ok := want[p.Namespace+"/"+p.Kind+"/"+p.Name]
		if !ok || !slices.Contains(reasons, p.Reason) {
			t.Errorf("false positive: %s %s/%s/%s: %s", p.Reason, p.Namespace, p.Kind, p.Name, p.Detail)
			falsePositives++
		}
	}
	return recall, falsePositives
}

func TestLargeFixtureOnFake(t *testing.T) {
	t.Parallel()
	o, planted := kubetest.LargeObjects("bx", testNow)
	if len(o.Namespaces) != 600 || len(o.Deployments) != 615 || len(o.Pods) < 1200 || len(o.Pods) > 1300 {
		t.Fatalf("fixture shape: %d ns, %d deployments, %d pods", len(o.Namespaces), len(o.Deployments), len(o.Pods))
	}
	warnings := 0
	for _, e := range o.Events {
		if e.Type == "Warning" {
			warnings++
		}
	}
	if warnings < 3600 || warnings > 3900 || len(planted) < 30 {
		t.Fatalf("%d warning events, %d planted", warnings, len(planted))
	}
	c, _ := fakeClient(t, o.All()...)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkLargeReport(t, r, "bx", planted)
	out := r.Render()
	r2, _ := c.ClusterProblems(context.Background(), ProblemOptions{})
	if r2.Render() != out {
		t.Error("two sweeps of the same state render differently")
	}
	if len(r.Problems) != len(planted) {
		t.Errorf("%d problems for %d planted: one per owner and reason", len(r.Problems), len(planted))
	}
	if raw, _ := json.Marshal(ProblemsToFindings(r)); len(raw) >= 64<<10 {
		t.Errorf("findings are %d bytes", len(raw))
	}
	if r.Churn.Events < 3500 || r.Churn.OnGone < 800 {
		t.Errorf("churn = %+v", r.Churn)
	}
	if testing.Verbose() {
		t.Logf("%d chars, %d problems:\n%s", utf8.RuneCountInString(out), len(r.Problems), out)
	}
}

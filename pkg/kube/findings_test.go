package kube

import (
	"context"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestProblemsToFindings(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs := ProblemsToFindings(r)
	if len(fs) != len(r.Problems) {
		t.Fatalf("%d findings for %d problems", len(fs), len(r.Problems))
	}
	byName := map[string]api.Finding{}
	for _, f := range fs {
		if f.Key != f.DeriveKey() || f.Key == "" || !api.ValidSeverity(f.Severity) || f.Remediation == "" {
			t.Errorf("bad finding %+v", f)
		}
		byName[f.Name] = f
	}
	oom := byName["oomkill"]
	if oom.Kind != "Deployment" || oom.Namespace != fixtureNS || oom.Container != "app" || oom.Severity != api.SeverityCritical ||
		!oom.Remediable || oom.Key != "shop-deployment-oomkill-app-oomkilled" {
		t.Errorf("oomkill finding = %+v", oom)
	}
	// 0/1 available: users are affected now, whatever the reason
	if f := byName["unschedulable"]; f.Remediable || f.Severity != api.SeverityCritical {
		t.Errorf("unschedulable finding = %+v", f)
	}
	if ProblemsToFindings(nil) != nil {
		t.Error("nil report")
	}
}

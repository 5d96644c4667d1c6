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
	got, ok := ChooseDelegation(fs)
	if !ok || got.Name != "oomkill" || got.Reason != ReasonOOMKilled {
		t.Errorf("delegation = %+v %v, want the OOM kill", got, ok)
	}
	if ProblemsToFindings(nil) != nil {
		t.Error("nil report")
	}
}

func TestChooseDelegation(t *testing.T) {
	t.Parallel()
	f := func(sev, kind, name, reason string, remediable bool) api.Finding {
		return api.Finding{Severity: sev, Kind: kind, Namespace: "shop", Name: name, Reason: reason, Remediable: remediable}
	}
	cases := []struct {
		name string
		in   []api.Finding
		want string // chosen name; "" = none
	}{
		{"empty", nil, ""},
		{"only non-remediable", []api.Finding{f("critical", "Deployment", "a", ReasonImagePull, false), f("high", "Deployment", "b", ReasonUnschedulable, false)}, ""},
		{"failed job claiming remediable", []api.Finding{f("critical", "Job", "nightly", ReasonCrashLoopBackOff, true), f("critical", "CronJob", "c", ReasonOOMKilled, true)}, ""},
		{"scheduling claiming remediable", []api.Finding{f("critical", "Deployment", "a", ReasonUnschedulable, true), f("high", "Deployment", "b", "FailedScheduling", true)}, ""},
		{"bare pod", []api.Finding{f("critical", "Pod", "p", ReasonOOMKilled, true)}, ""},
		{"remediable false is respected", []api.Finding{f("critical", "Deployment", "fleet", ReasonOOMKilled, false)}, ""},
		{"severity first", []api.Finding{f("high", "Deployment", "a", ReasonOOMKilled, true), f("critical", "Deployment", "b", ReasonProbeFailure, true)}, "b"},
		{"OOM before crash loop at equal severity", []api.Finding{f("critical", "Deployment", "a", ReasonCrashLoopBackOff, true), f("critical", "StatefulSet", "z", ReasonOOMKilled, true)}, "z"},
		{"key breaks ties", []api.Finding{f("high", "Deployment", "b", ReasonCrashLoopBackOff, true), f("high", "Deployment", "a", ReasonCrashLoopBackOff, true)}, "a"},
		{"daemonset probe failure", []api.Finding{f("medium", "DaemonSet", "agent", ReasonProbeFailure, true)}, "agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ChooseDelegation(tc.in)
			if ok != (tc.want != "") || got.Name != tc.want {
				t.Errorf("got %+v %v, want %q", got, ok, tc.want)
			}
			if ok && got.Key == "" {
				t.Error("chosen finding has no key")
			}
		})
	}
}

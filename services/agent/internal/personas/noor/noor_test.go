package noor

import (
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
)

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
		{"only non-remediable", []api.Finding{f("critical", "Deployment", "a", kube.ReasonImagePull, false), f("high", "Deployment", "b", kube.ReasonUnschedulable, false)}, ""},
		{"failed job claiming remediable", []api.Finding{f("critical", "Job", "nightly", kube.ReasonCrashLoopBackOff, true), f("critical", "CronJob", "c", kube.ReasonOOMKilled, true)}, ""},
		{"scheduling claiming remediable", []api.Finding{f("critical", "Deployment", "a", kube.ReasonUnschedulable, true), f("high", "Deployment", "b", "FailedScheduling", true)}, ""},
		{"bare pod", []api.Finding{f("critical", "Pod", "p", kube.ReasonOOMKilled, true)}, ""},
		{"remediable false is respected", []api.Finding{f("critical", "Deployment", "fleet", kube.ReasonOOMKilled, false)}, ""},
		{"severity first", []api.Finding{f("high", "Deployment", "a", kube.ReasonOOMKilled, true), f("critical", "Deployment", "b", kube.ReasonProbeFailure, true)}, "b"},
		{"OOM before crash loop at equal severity", []api.Finding{f("critical", "Deployment", "a", kube.ReasonCrashLoopBackOff, true), f("critical", "StatefulSet", "z", kube.ReasonOOMKilled, true)}, "z"},
		{"key breaks ties", []api.Finding{f("high", "Deployment", "b", kube.ReasonCrashLoopBackOff, true), f("high", "Deployment", "a", kube.ReasonCrashLoopBackOff, true)}, "a"},
		{"daemonset probe failure", []api.Finding{f("medium", "DaemonSet", "agent", kube.ReasonProbeFailure, true)}, "agent"},
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

func TestChooseDelegationFor(t *testing.T) {
	t.Parallel()
	f := func(sev, name, reason string) api.Finding {
		return api.Finding{Severity: sev, Kind: "Deployment", Namespace: "shop", Name: name, Reason: reason, Remediable: true}
	}
	fs := []api.Finding{f("critical", "oomkill", kube.ReasonOOMKilled), f("high", "crashloop", kube.ReasonCrashLoopBackOff),
		{Severity: "high", Kind: "Deployment", Namespace: "shop", Name: "imagepull", Reason: kube.ReasonImagePull}}
	if got, _ := ChooseDelegation(fs); got.Name != "oomkill" {
		t.Errorf("unrestricted: %s", got.Name)
	}
	if got, ok := ChooseDelegationFor(fs, kube.ObjectRef{Namespace: "shop", Kind: "Deployment", Name: "crashloop"}); !ok || got.Name != "crashloop" {
		t.Errorf("for crashloop: %+v %v", got, ok)
	}
	for _, o := range []kube.ObjectRef{{Namespace: "shop", Kind: "Deployment", Name: "imagepull"}, {Namespace: "other", Kind: "Deployment", Name: "crashloop"}, {}} {
		if got, ok := ChooseDelegationFor(fs, o); ok {
			t.Errorf("for %v: delegated %+v", o, got)
		}
	}
}

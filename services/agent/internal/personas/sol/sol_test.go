package sol

import (
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		f    api.Finding
		want string
	}{
		{api.Finding{Kind: "Deployment", Name: "oomkill", Container: "app", Reason: "OOMKilled"}, PlanMemoryPR},
		{api.Finding{Kind: "statefulset", Name: "db", Container: "postgres", Reason: "oomkilled"}, PlanMemoryPR},
		{api.Finding{Kind: "Deployment", Name: "oomkill", Reason: "OOMKilled"}, PlanRecommend}, // which container?
		{api.Finding{Kind: "Pod", Name: "oomkill-7d9", Container: "app", Reason: "OOMKilled"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Container: "api", Reason: "Error", Detail: "exit code 137"}, PlanRecommend},
		// a crash loop: the diagnosis's evidence decides, never words
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "api-config",
			ChangedAt: t0.Add(3 * time.Minute), PodsStartedAt: t0}}, PlanRestart},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "api-config",
			ChangedAt: t0.Add(-3 * time.Minute), PodsStartedAt: t0}}, PlanRecommend}, // changed before the pods started
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "api-config",
			ChangedAt: t0, PodsStartedAt: t0}}, PlanRecommend}, // the same second proves nothing
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "api-config",
			ChangedAt: t0}}, PlanRecommend}, // no pod start: no evidence
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", Detail: "Started crashing 4 minutes after ConfigMap api-config was updated."}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", Detail: "crashing since the config change at 10:02"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "crashloop", Reason: "CrashLoopBackOff", Detail: "container app crash-looping, restarts 6; last exit 1 (Error)",
			Remediation: "read the previous container's logs; if it broke after a config change, a rollout restart may clear it"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", Detail: "panic: nil pointer dereference"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "ImagePullBackOff"}, PlanRecommend},
		{api.Finding{}, PlanRecommend},
	}
	for _, c := range tests {
		if got := Plan(c.f); got != c.want {
			t.Errorf("Plan(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
}

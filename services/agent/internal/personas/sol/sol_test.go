package sol

import (
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f    api.Finding
		want string
	}{
		{api.Finding{Kind: "Deployment", Name: "oomkill", Container: "app", Reason: "OOMKilled"}, PlanMemoryPR},
		{api.Finding{Kind: "statefulset", Name: "db", Container: "postgres", Reason: "oomkilled"}, PlanMemoryPR},
		{api.Finding{Kind: "Deployment", Name: "oomkill", Reason: "OOMKilled"}, PlanRecommend}, // which container?
		{api.Finding{Kind: "Pod", Name: "oomkill-7d9", Container: "app", Reason: "OOMKilled"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Container: "api", Reason: "Error", Detail: "exit code 137"}, PlanRecommend},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", Detail: "Started crashing 4 minutes after ConfigMap api-config was updated."}, PlanRestart},
		{api.Finding{Kind: "Deployment", Name: "api", Reason: "CrashLoopBackOff", Detail: "crashing since the config change at 10:02"}, PlanRestart},
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

package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pager/pagertest"
)

// TestAnUnfixableCriticalFindingPagesOnceAndResolvesWithTheAlert: two
// alerts' investigations end with the same critical finding no agent may
// fix (an image that cannot be pulled): Opsgenie gets one alert, with the
// evidence and the investigation report's link; a remediable finding and
// a high one page nobody. When Alertmanager resolves the alert that
// paged, the Opsgenie alert is closed by its alias, once.
func TestAnUnfixableCriticalFindingPagesOnceAndResolvesWithTheAlert(t *testing.T) {
	og := pagertest.NewOpsgenie(t, "3f2a9c4e-6f0d-4b8e-9a51-0c7d2e8b1a47")
	c := newCore(t, coreOpts{env: map[string]string{"PAGE_TARGET": "opsgenie", "PAGE_KEY": og.Key, "PAGE_URL": og.URL,
		"CORE_PUBLIC_URL": "https://kubecrew.example.com/core"}})
	c.Agent.Reply(func(req api.RunRequest) (int, any) {
		done := time.Date(2026, 11, 30, 12, 0, 5, 0, time.UTC)
		return 200, api.RunResult{RunID: "run-" + req.Context["fingerprint"], Agent: "platform-sre", Status: api.StatusCompleted,
			Answer: "image cannot be pulled", StartedAt: done.Add(-5 * time.Second), FinishedAt: &done,
			Findings: []api.Finding{
				{Key: "shop-deployment-web-app-imagepullbackoff", Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "web",
					Container: "app", Reason: "ImagePullBackOff", Detail: `Back-off pulling image "registry.invalid/web:1.4"`,
					Remediation: "fix the image reference in Git", Remediable: false, Confidence: 1},
				{Key: "shop-deployment-cart-app-oomkilled", Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "cart",
					Container: "app", Reason: "OOMKilled", Remediable: true, Confidence: 1},
				{Key: "shop-deployment-api-app-probefailure", Severity: "high", Kind: "Deployment", Namespace: "shop", Name: "api",
					Container: "app", Reason: "ProbeFailure", Confidence: 0.8},
			}}
	})
	for _, fp := range []string{"fpA", "fpB"} {
		if code, b, _ := do(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert(fp, "KubePodNotReady", "shop", "firing"))); code != 200 {
			t.Fatalf("webhook %s = %d %s", fp, code, b)
		}
		c.WaitIdle()
	}
	created := og.Created()
	if len(created) != 1 || len(og.Rejected()) != 0 {
		t.Fatalf("created %+v, rejected %v; want one alert", created, og.Rejected())
	}
	a := created[0]
	if a.Alias != "kubecrew/shop-deployment-web-app" || a.Priority != "P1" || a.Entity != "shop/Deployment/web" ||
		!strings.Contains(a.Message, "ImagePullBackOff") || a.Details["reason"] != "ImagePullBackOff" ||
		!strings.Contains(a.Details["detail"], "registry.invalid/web:1.4") ||
		!strings.HasPrefix(a.Details["report"], "https://kubecrew.example.com/core/api/v1/investigations/") ||
		!strings.HasSuffix(a.Details["report"], "/report") || a.Details["fingerprint"] != soloKey(alert("fpA", "KubePodNotReady", "shop", "firing")) {
		t.Fatalf("the Opsgenie alert: %+v", a)
	}

	// fpB's investigation found the same workload: its resolve closes nothing.
	do(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fpB", "KubePodNotReady", "shop", "resolved")))
	for range 2 {
		do(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fpA", "KubePodNotReady", "shop", "resolved")))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(og.Closed()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Shutdown(t.Context()); err != nil { // waits for the resolves in flight (the cleanup shuts down again)
		t.Fatal(err)
	}
	if cl := og.Closed(); len(cl) != 1 || cl[0].Alias != a.Alias || cl[0].Note != "Alertmanager resolved the alert" {
		t.Fatalf("closed %+v, want one close of %s", cl, a.Alias)
	}
}

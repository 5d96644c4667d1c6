package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// Noor's sweep on the real API server: coverage decides the verdict, and an
// alert is answered about its object.

func noorRun(t *testing.T, url, workflow string, ctx map[string]string) api.RunResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"task": "Check the cluster", "workflow_type": workflow, "context": ctx})
	code, raw := do(t, "POST", url+"/run", string(body))
	if code != http.StatusOK {
		t.Fatalf("/run = %d %s", code, raw)
	}
	var res api.RunResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func alertDoc(labels map[string]string) string {
	b, _ := json.Marshal(map[string]any{"status": "firing", "labels": labels})
	return string(b)
}

// A service account with no RBAC and a server that answers 404 for every
// path: the sweep checked nothing, and says so first — never "healthy".
func TestNoorSweepThatCheckedNothingIsUnknown(t *testing.T) {
	env := kubetest.Start(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	kc404 := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kc404, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+srv.URL+"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	for name, kc := range map[string]string{"no RBAC": kubeconfigWith(t, env, nil), "404 server": kc404} {
		t.Run(name, func(t *testing.T) {
			a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": kc})
			for _, ns := range []string{"", "default"} {
				res := noorRun(t, a.url, api.WorkflowPulseTask, map[string]string{"namespace": ns})
				if res.Verdict != "unknown" || !strings.HasPrefix(res.Answer, "UNKNOWN — nothing could be checked") || strings.Contains(res.Answer, "Healthy") {
					t.Errorf("ns %q: verdict %q, answer:\n%s", ns, res.Verdict, res.Answer)
				}
			}
		})
	}
}

// An alert for a namespace that does not exist is "unknown", with why.
func TestNoorAlertForMissingNamespace(t *testing.T) {
	env := kubetest.Start(t)
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig})
	ns := fmt.Sprintf("kc-gone-%d", rand.IntN(1_000_000))
	res := noorRun(t, a.url, api.WorkflowAlert, map[string]string{"namespace": ns,
		"alert": alertDoc(map[string]string{"alertname": "KubePodCrashLooping", "namespace": ns, "pod": "api-7d9f-x2x"})})
	if res.Verdict != "unknown" || !strings.HasPrefix(res.Answer, "UNKNOWN") || !strings.Contains(res.Answer, "namespace "+ns+" does not exist") {
		t.Errorf("verdict %q, answer:\n%s", res.Verdict, res.Answer)
	}
}

// An alert whose Deployment has recovered is answered about it, with the
// evidence, as a low finding — never with silence.
func TestNoorAlertOnRecoveredWorkload(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-rec-%d", rand.IntN(1_000_000))
	if err := kubetest.Load(context.Background(), env.Clientset, kubetest.RecoveredObjects(ns, time.Now()), 4); err != nil {
		t.Fatal(err)
	}
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig})
	res := noorRun(t, a.url, api.WorkflowAlert, map[string]string{"namespace": ns,
		"alert": alertDoc(map[string]string{"alertname": "KubePodOOMKilled", "namespace": ns, "deployment": "ledger"})})
	if res.Verdict != "recovered" || !strings.HasPrefix(res.Answer, "Alerted object "+ns+"/Deployment/ledger: looks recovered now") ||
		!strings.Contains(res.Answer, "OOMKilled (exit 137)") {
		t.Errorf("verdict %q, answer:\n%s", res.Verdict, res.Answer)
	}
	if len(res.Findings) != 1 || res.Findings[0].Reason != "AlertRecovered" || res.Findings[0].Severity != api.SeverityLow ||
		res.Findings[0].Name != "ledger" || res.Findings[0].Remediable {
		t.Errorf("findings = %+v", res.Findings)
	}
	if res.Delegation != nil {
		t.Errorf("a recovered workload was delegated: %+v", res.Delegation)
	}
}

// A crash-loop alert for crashloop delegates crashloop, not the OOM kill
// that outranks it elsewhere in the namespace; an image-pull alert
// delegates nothing and says why.
func TestNoorAlertActsOnTheAlertedWorkload(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-alert-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig})
	res := noorRun(t, a.url, api.WorkflowAlert, map[string]string{"namespace": ns,
		"alert": alertDoc(map[string]string{"alertname": "KubePodCrashLooping", "namespace": ns, "deployment": "crashloop", "container": "app"})})
	if d := res.Delegation; d == nil || d.Finding.Name != "crashloop" || d.Finding.Reason != "CrashLoopBackOff" {
		t.Errorf("delegation = %+v", res.Delegation)
	}
	if !strings.HasPrefix(res.Answer, "Alerted object "+ns+"/Deployment/crashloop: broken now") || res.Verdict == "delegated" {
		// no Sol in this fleet: the delegation could not be sent, so the verdict is not "delegated"
		t.Errorf("verdict %q, answer:\n%s", res.Verdict, res.Answer)
	}
	res = noorRun(t, a.url, api.WorkflowAlert, map[string]string{"namespace": ns,
		"alert": alertDoc(map[string]string{"alertname": "KubePodNotReady", "namespace": ns, "deployment": "imagepull"})})
	if res.Delegation != nil || !strings.Contains(res.Answer, "Nothing delegated: the alerted object "+ns+"/Deployment/imagepull") {
		t.Errorf("delegation %+v, answer:\n%s", res.Delegation, res.Answer)
	}
}

// In model mode too: a model that answers "all clear" while the agent's
// identity could list nothing does not make the sweep healthy — Noor's
// backstop sweeps and sets the verdict to unknown.
func TestNoorModelModeCannotClaimHealthyUnchecked(t *testing.T) {
	env := kubetest.Start(t)
	kc := kubeconfigWith(t, env, nil)
	srv := llmtest.NewServer(t, llmtest.Text("All clear: nothing is wrong in the cluster."),
		llmtest.Text(`{"summary":"all clear","healthy":true,"verdict":"healthy","findings":[]}`))
	e := modelEnv(srv, "noor")
	e["KUBECONFIG"] = kc
	e["AGENT_TOOLS"] = "load_skill,cluster_problems" // the backstop calls the tool through the agent's gate
	a := start(t, e)
	res := noorRun(t, a.url, api.WorkflowPulseTask, map[string]string{})
	if res.Verdict != "unknown" || !strings.HasPrefix(res.Answer, "UNKNOWN — nothing could be checked") {
		t.Errorf("verdict %q (answer %q), want unknown", res.Verdict, res.Answer)
	}
}

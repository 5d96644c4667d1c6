package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/eval"
)

// A crash-loop alert on the real API server, Noor with the eval's competent
// scripted model: the first prompt already holds the focused sweep (framed
// as tool output), so the model hands the alerted workload on and closes
// with the report in the same reply — one model call, no report pass; a
// model that wanted more would read, then answer (at most two). The model
// is given the evidence, never the answer: it decides from the sweep's
// lines as it would from its own cluster_problems call (which workload it
// hands on is the policy's judgement, not this test's).
func TestNoorAlertTriageInOneModelCall(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-triage-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewPolicyServer(eval.Scripted(eval.Competent, 0))
	t.Cleanup(model.Close)
	e := modelEnv(model, "noor")
	delete(e, "AGENT_TOOLS")
	e["KUBECONFIG"] = env.Kubeconfig
	a := start(t, e)
	res := noorRun(t, a.url, api.WorkflowAlert, map[string]string{"namespace": ns,
		"alert": alertDoc(map[string]string{"alertname": "KubePodCrashLooping", "namespace": ns, "deployment": "crashloop", "container": "app"})})
	reqs := model.Requests()
	if len(reqs) != 1 || res.ModelCalls != 1 {
		t.Fatalf("%d model requests (model_calls %d), want 1; status %s, answer %q", len(reqs), res.ModelCalls, res.Status, res.Answer)
	}
	first := reqs[0].Request.Messages[1].Content
	if !strings.Contains(first, `<tool_output tool="cluster_problems">`) || !strings.Contains(first, ns+"/Deployment/crashloop") {
		t.Errorf("the first prompt lacks the focused sweep:\n%s", first)
	}
	if d := res.Delegation; d == nil || d.Finding.Namespace != ns || !d.Finding.Remediable {
		t.Errorf("delegation = %+v, want a remediable finding of %s handed on in the same reply", res.Delegation, ns)
	}
	if len(res.Findings) == 0 || strings.Contains(res.Answer, "```") {
		t.Errorf("findings %d, answer %q", len(res.Findings), res.Answer)
	}
}

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/eval"
)

// BenchmarkTriage is what one alert triage costs in model mode on the
// fixture cluster (the real API server, the fixtures' broken workloads in
// one namespace): Noor, driven by the eval suite's competent scripted model
// (eval.Competent, which decides from each request as a model would),
// answers an alert. It reports, per triage, the model calls, the prompt
// tokens sent (estimated as the context budget does, llm.EstimateRequest:
// bytes/3), the completion tokens the run counted, the largest single
// request and the wall time (s/triage). A crash-loop alert runs with the
// default context window and with AGENT_CONTEXT_TOKENS=16000, the model
// answering at once; then the alert of each eval scenario that fires on a
// fixture workload (eval/scenarios) runs with the model answering each
// call after 2 s, as a real one does (eval.Scripted). docs/MANUAL.md
// "Evaluating the fleet" shows the figures.
func BenchmarkTriage(b *testing.B) {
	env := kubetest.Start(b)
	ns := fmt.Sprintf("kc-bench-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	type triage struct {
		alertname, workload, window string
		delay                       time.Duration
	}
	cases := []triage{{"KubePodCrashLooping", "crashloop", "default", 0}, {"KubePodCrashLooping", "crashloop", "16000", 0}}
	for _, a := range [][2]string{{"KubePodOOMKilled", "oomkill"}, {"KubePodCrashLooping", "crashloop"}, {"KubePodNotReady", "imagepull"},
		{"KubePodNotReady", "configerror"}, {"KubeDeploymentReplicasMismatch", "notready"}, {"KubePodNotScheduled", "unschedulable"}} {
		cases = append(cases, triage{a[0], a[1], "default", 2 * time.Second})
	}
	for _, c := range cases {
		alert, _ := json.Marshal(map[string]any{"status": "firing", "labels": map[string]string{
			"alertname": c.alertname, "namespace": ns, "deployment": c.workload, "container": "app"}})
		body, _ := json.Marshal(map[string]any{"task": "Triage the alert " + c.alertname, "workflow_type": api.WorkflowAlert,
			"context": map[string]string{"namespace": ns, "alert": string(alert)}})
		b.Run(fmt.Sprintf("%s/context=%s/delay=%s", c.workload, c.window, c.delay), func(b *testing.B) {
			model := llmtest.NewPolicyServer(eval.Scripted(eval.Competent, c.delay))
			defer model.Close()
			vars := map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig, "LLM_BASE_URL": model.URL(),
				"AGENT_MODEL": "eval-competent", "LLM_API_KEY": "bench", "LLM_TIMEOUT": "30s"}
			if c.window != "default" {
				vars["AGENT_CONTEXT_TOKENS"] = c.window
			}
			triageCost(b, model, serveAgent(b, vars), body)
		})
	}
}

// triageCost runs b.N triages and reports what they cost.
func triageCost(b *testing.B, model *llmtest.Server, url string, body []byte) {
	var calls, prompt, completion, largest int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seen := len(model.Requests())
		res := postRun(b, url, body)
		if res.Status == api.StatusFailed || res.Answer == "" {
			b.Fatalf("triage %d: %s %q (%s)", i, res.Status, res.Answer, res.Error)
		}
		completion += res.Tokens.Completion
		for _, rec := range model.Requests()[seen:] {
			if len(rec.Request.Messages) == 0 {
				continue
			}
			n := llm.EstimateRequest(rec.Request)
			calls++
			prompt += n
			largest = max(largest, n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(calls)/float64(b.N), "model-calls/op")
	b.ReportMetric(float64(prompt)/float64(b.N), "prompt-tokens/op")
	b.ReportMetric(float64(completion)/float64(b.N), "completion-tokens/op")
	b.ReportMetric(float64(largest), "max-request-tokens")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/triage")
}

// serveAgent builds a whole agent from vars and serves it on loopback.
func serveAgent(tb testing.TB, vars map[string]string) string {
	tb.Helper()
	cfg, err := config.Load(envOf(vars), app.LoadPersona)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(a.Server)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		srv.Close()
	})
	return srv.URL
}

func postRun(tb testing.TB, url string, body []byte) api.RunResult {
	tb.Helper()
	resp, err := http.Post(url+"/run", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var res api.RunResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &res) != nil {
		tb.Fatalf("/run = %d %s", resp.StatusCode, raw)
	}
	return res
}

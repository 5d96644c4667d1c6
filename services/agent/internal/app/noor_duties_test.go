package app_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// Noor's backstop covers every autonomous run type: a peer's question
// answered by a model that delegated nothing still hands the remediable
// finding on, in code.
func TestNoorBackstopCoversAPeersQuestion(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-ask-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, llmtest.Text("Several workloads look unwell."))
	e := modelEnv(srv, "noor")
	e["KUBECONFIG"] = env.Kubeconfig
	e["AGENT_TOOLS"] = "load_skill,cluster_problems"
	e["AGENT_PEERS"] = "sol=http://127.0.0.1:1" // nobody answers: the decision is recorded, not sent
	a := start(t, e)
	res := noorRun(t, a.url, api.WorkflowA2AAsk, map[string]string{"namespace": ns})
	if d := res.Delegation; d == nil || d.To != "k8s-engineer" || d.Finding.Name != "oomkill" {
		t.Fatalf("delegation = %+v (answer %q)", res.Delegation, res.Answer)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("model requests = %d, want 1 (a question answered without tools has no synthesis)", len(srv.Requests()))
	}
}

// notRemediable drops the fixtures Sol could fix (OOM kill, crash loop,
// failing probes): a cluster whose problems are all for a person, so a
// tick delegates nothing.
func notRemediable(o *kubetest.Objects) {
	keep := func(name string) bool {
		for _, p := range []string{"oomkill", "crashloop", "notready"} {
			if strings.HasPrefix(name, p) {
				return false
			}
		}
		return true
	}
	keepObjects(o, keep)
}

// keepObjects keeps the fixtures' Deployments, ReplicaSets, pods and
// events whose (involved object's) name keep accepts.
func keepObjects(o *kubetest.Objects, keep func(name string) bool) {
	o.Deployments = filter(o.Deployments, keep)
	o.ReplicaSets = filter(o.ReplicaSets, keep)
	o.Pods = filter(o.Pods, keep)
	evs := o.Events[:0]
	for _, ev := range o.Events {
		if keep(ev.InvolvedObject.Name) {
			evs = append(evs, ev)
		}
	}
	o.Events = evs
}

func filter[T metav1.Object](xs []T, keep func(name string) bool) []T {
	out := xs[:0]
	for _, x := range xs {
		if keep(x.GetName()) {
			out = append(out, x)
		}
	}
	return out
}

// A pulse tick that finds the last tick's problems, after a tick that
// delegated nothing, does not call the model: the tick records unchanged
// with the findings; a change in the problem set runs the model again.
func TestNoorPulseUnchangedSkipsTheModel(t *testing.T) {
	env := kubetest.Private(t, "pulse-unchanged")
	ns := fmt.Sprintf("kc-unch-%d", rand.IntN(1_000_000))
	o, err := kubetest.BrokenObjects(ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	notRemediable(o)
	if err := kubetest.Load(t.Context(), env.Clientset, o, 4); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewPolicyServer(func(req openai.ChatCompletionRequest) llmtest.Reply {
		if len(req.Tools) == 0 {
			return llmtest.JSON(map[string]any{"healthy": false, "verdict": "issues_found", "summary": "s", "findings": []any{}})
		}
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				return llmtest.Text("Three problems, none Sol may fix: reported for a person.")
			}
		}
		return llmtest.ToolCalls(llmtest.Call{Name: "cluster_problems", Args: `{}`})
	})
	t.Cleanup(srv.Close)
	e := modelEnv(srv, "noor")
	e["KUBECONFIG"] = env.Kubeconfig
	e["AGENT_TOOLS"] = "load_skill,cluster_problems"
	e["PULSE_ENABLED"] = "false"
	a := start(t, e)
	tick := func() (outcome string, res api.RunResult) {
		t.Helper()
		code, body := do(t, "POST", a.url+"/pulse?task=0", "")
		var tr struct {
			Outcome string        `json:"outcome"`
			Result  api.RunResult `json:"result"`
		}
		if err := json.Unmarshal(body, &tr); code != 200 || err != nil {
			t.Fatalf("POST /pulse = %d %s", code, body)
		}
		return tr.Outcome, tr.Result
	}
	calls := func() int { return len(srv.Requests()) }

	if out, res := tick(); out != "ran" || res.ModelCalls == 0 || res.Delegation != nil {
		t.Fatalf("first tick: %s %+v", out, res)
	}
	before := calls()
	out, res := tick()
	if out != "unchanged" || res.Verdict != api.VerdictUnchanged || res.ModelCalls != 0 || calls() != before {
		t.Fatalf("second tick: %s, %d model requests: %+v", out, calls()-before, res)
	}
	names := map[string]bool{}
	for _, f := range res.Findings {
		names[f.Name] = true
	}
	if !names["imagepull"] || !names["unschedulable"] || !names["configerror"] || names["oomkill"] {
		t.Errorf("unchanged tick's findings: %+v", res.Findings)
	}
	if !strings.HasPrefix(res.Answer, "Unchanged since the last tick (run ") {
		t.Errorf("answer: %q", res.Answer)
	}
	// A problem goes away: the set changed, the model judges it.
	if err := env.Clientset.AppsV1().Deployments(ns).Delete(t.Context(), "imagepull", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Clientset.CoreV1().Pods(ns).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=imagepull"}); err != nil {
		t.Fatal(err)
	}
	before = calls()
	if out, res := tick(); out != "ran" || calls() == before {
		t.Fatalf("after a change: %s %+v", out, res)
	}
}

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// TestKillSwitchStopsARestartAlreadyPlanned: Sol's run starts with actions
// allowed and its model plans a rollout restart; while the plan is on its
// way an operator pauses the fleet (PUT /actions, with the agent's token).
// The restart the run then executes is refused — the Deployment on the API
// server is untouched — the trace records the envelope's refusal, and the
// run's answer says it was paused and read-only.
func TestKillSwitchStopsARestartAlreadyPlanned(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	ns := fmt.Sprintf("kc-pause-%d", rand.IntN(1_000_000_000))
	cs := env.Clientset
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{envelope.Label: "enabled"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the Deployment first: without a controller-manager the namespace keeps it
		_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{})
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// its pod predates a ConfigMap write: the restart is justified, so
	// only the kill switch can stop it
	if _, err := kubetest.CreateRestartable(ctx, cs, ns, "web", nil); err != nil {
		t.Fatal(err)
	}

	var agentURL string
	var mu sync.Mutex
	var pauseErr error
	pause := func(openai.ChatCompletionRequest) bool {
		req, _ := http.NewRequest(http.MethodPut, agentURL+"/actions", strings.NewReader(`{"paused":true,"reason":"incident bridge: hands off","by":"alice"}`))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("PUT /actions = %d", resp.StatusCode)
			}
		}
		mu.Lock()
		pauseErr = err
		mu.Unlock()
		return true
	}
	srv := llmtest.NewServer(t,
		llmtest.When(pause, llmtest.ToolCalls(llmtest.Call{Name: "k8s_rollout",
			Args: fmt.Sprintf(`{"action":"restart","kind":"deployments","namespace":%q,"name":"web"}`, ns)})),
		llmtest.Text("The restart of web was refused."), llmtest.Text("{}"), llmtest.Text("{}"))
	e := modelEnv(srv, "sol")
	e["AGENT_TOOLS"], e["KUBECONFIG"], e["AUTH_TOKEN"] = "k8s_rollout", env.Kubeconfig, "tok"
	a := start(t, e)
	agentURL = a.url

	if code, b := do(t, "PUT", a.url+"/actions", `{"paused":true,"reason":"x"}`); code != 401 {
		t.Fatalf("PUT /actions without the token = %d %s", code, b)
	}
	code, body := do(t, "POST", a.url+"/run", `{"task":"restart web"}`, "Authorization", "Bearer tok")
	if code != 200 {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	mu.Lock()
	if pauseErr != nil {
		t.Fatal(pauseErr)
	}
	mu.Unlock()
	var res api.RunResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Answer, "Actions are paused by alice at ") || !strings.Contains(res.Answer, ": incident bridge: hands off — this run was read-only.") {
		t.Errorf("answer = %q", res.Answer)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Spec.Template.Annotations[kube.RestartAnnotation]; v != "" {
		t.Fatalf("the planned restart reached the API server after the pause (restartedAt=%s)", v)
	}
	_, tb := do(t, "GET", a.url+"/runs/"+res.RunID+"/trace", "", "Authorization", "Bearer tok")
	var decision, denied bool
	for _, line := range strings.Split(strings.TrimSpace(string(tb)), "\n") {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		if ev.Type == "envelope" && ev.Data["decision"] == "refuse" && strings.Contains(fmt.Sprint(ev.Data["why"]), "paused by alice") {
			decision = true
		}
		if ev.Type == "tool_result" && ev.Data["outcome"] == "denied" && strings.Contains(fmt.Sprint(ev.Data["output"]), "paused by alice") {
			denied = true
		}
	}
	if !decision || !denied {
		t.Errorf("trace lacks the envelope's refusal (%v) or the denied tool result (%v):\n%s", decision, denied, tb)
	}
	_, lb := do(t, "GET", a.url+"/actions/log?outcome=refused", "", "Authorization", "Bearer tok")
	var log struct {
		Items []api.ActionView `json:"items"`
	}
	if err := json.Unmarshal(lb, &log); err != nil || len(log.Items) != 1 || log.Items[0].RunID != res.RunID || log.Items[0].Action != "k8s.rollout.restart" {
		t.Errorf("/actions/log = %s", lb)
	}
	if code, b := do(t, "GET", a.url+"/actions", "", "Authorization", "Bearer tok"); code != 200 || !strings.Contains(string(b), `"line":"paused by alice at `) {
		t.Errorf("GET /actions = %d %s", code, b)
	}
}

// TestSolProposesInShadowMode: Sol's playbook on a delegated OOMKill in a
// namespace labelled kubecrew.io/actions=propose prepares the PR and opens
// none — the forge's refs are unchanged, the answer and the proposals list
// carry the exact diff, no reviewer is told — and a paused fleet makes it
// a refusal.
func TestSolProposesInShadowMode(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	ns := fmt.Sprintf("kc-shadow-%d", rand.IntN(1_000_000_000))
	if err := env.LoadFixtures(ctx, ns); err != nil {
		t.Fatal(err)
	}
	nsObj, err := env.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[envelope.Label] = envelope.ModePropose
	if _, err := env.Clientset.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := fixturesRepo(t)
	refs := func() string {
		out, err := exec.Command("git", "-C", repo, "for-each-ref").CombinedOutput()
		if err != nil {
			t.Fatalf("%v %s", err, out)
		}
		return string(out)
	}
	before := refs()
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "KUBECONFIG": env.Kubeconfig, "GITOPS_FORGE": "local", "GITOPS_REPO": repo})
	finding, _ := json.Marshal(api.Finding{Severity: "critical", Kind: "Deployment", Namespace: ns, Name: "oomkill", Container: "app",
		Reason: "OOMKilled", Detail: "OOMKilled 293 times", Remediable: true, Confidence: 1})
	body, _ := json.Marshal(api.RunRequest{Task: "fix this finding", Context: map[string]string{"finding": string(finding)}})
	run := func() api.RunResult {
		t.Helper()
		code, b := do(t, "POST", a.url+"/run", string(body))
		if code != 200 {
			t.Fatalf("POST /run = %d %s", code, b)
		}
		var res api.RunResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run()
	if res.Verdict != "recommendation" || !strings.Contains(res.Answer, envelope.ProposedPrefix) ||
		!strings.Contains(res.Answer, "-              memory: 32Mi\n+              memory: 48Mi") {
		t.Fatalf("propose run: verdict %s, answer %q", res.Verdict, res.Answer)
	}
	if refs() != before {
		t.Fatal("the forge changed in propose mode")
	}
	_, pb := do(t, "GET", a.url+"/actions/proposals", "")
	if !strings.Contains(string(pb), `"outcome":"proposed"`) || !strings.Contains(string(pb), `"namespace":"`+ns+`"`) {
		t.Errorf("proposals: %s", pb)
	}

	if code, b := do(t, "PUT", a.url+"/actions", `{"paused":true,"reason":"freeze"}`); code != 200 {
		t.Fatalf("pause: %d %s", code, b)
	}
	res = run()
	if res.Verdict != api.VerdictRefused || !strings.Contains(res.Answer, "paused by agent API at ") {
		t.Fatalf("paused run: verdict %s, answer %q", res.Verdict, res.Answer)
	}
}

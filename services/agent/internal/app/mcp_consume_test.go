package app_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpclient/mcptest"
)

// k8sMCPAgent starts Noor with a model and kubernetes-mcp-server (the real
// binary, on stdio, on the test API server) as AGENT_MCP_SERVERS "k8s".
func k8sMCPAgent(t *testing.T, env *kubetest.Env, model *llmtest.Server, readOnlyMode bool) *agent {
	t.Helper()
	cmd := mcptest.KubernetesMCP(t) + " --kubeconfig " + env.Kubeconfig + " --disable-multi-cluster"
	if readOnlyMode {
		cmd += " --read-only"
	}
	return start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig,
		"AGENT_MCP_SERVERS": "k8s=" + cmd, "AGENT_MCP_READ_TOOLS": "k8s_pods_list_in_namespace,k8s_pods_get,k8s_events_list",
		"LLM_BASE_URL": model.URL(), "AGENT_MODEL": "test-model", "LLM_API_KEY": "k", "LLM_TIMEOUT": "20s", "SYNTHESIS_TIMEOUT": "10s"})
}

func runOn(t *testing.T, a *agent, req api.RunRequest) (api.RunResult, []traceEvent) {
	t.Helper()
	body, _ := json.Marshal(req)
	var auth []string
	if a.token != "" {
		auth = []string{"Authorization", "Bearer " + a.token}
	}
	code, out := do(t, http.MethodPost, a.url+"/run", string(body), auth...)
	if code != http.StatusOK {
		t.Fatalf("POST /run = %d %s", code, out)
	}
	var res api.RunResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	var view struct {
		Trace []traceEvent `json:"trace"`
	}
	_, vb := do(t, http.MethodGet, a.url+"/runs/"+res.RunID, "", auth...)
	if err := json.Unmarshal(vb, &view); err != nil {
		t.Fatal(err)
	}
	return res, view.Trace
}

func toolResults(trace []traceEvent, name string) []traceEvent {
	var out []traceEvent
	for _, ev := range trace {
		if ev.Type == "tool_result" && ev.Data["name"] == name {
			out = append(out, ev)
		}
	}
	return out
}

// Noor, in an autonomous (alert) run, reads the cluster through
// kubernetes-mcp-server's pods_list_in_namespace: the tool is offered to
// the model (annotated read-only and on AGENT_MCP_READ_TOOLS), the call
// reaches the real API server, and the answer comes back to the model.
func TestExternalMCPReadToolInAScriptedRun(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-mcpread-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{Name: "k8s_pods_list_in_namespace", Args: fmt.Sprintf(`{"namespace":%q}`, ns)}),
		llmtest.Text("The oomkill and crashloop pods are failing."),
		llmtest.Text(`{"verdict":"issues_found","findings":[]}`), llmtest.Text(`{"verdict":"issues_found","findings":[]}`))
	a := k8sMCPAgent(t, env, model, true)

	_, trace := runOn(t, a, api.RunRequest{Task: "Pods in " + ns + " are failing: look", WorkflowType: "alert",
		Context: map[string]string{"namespace": ns}})
	results := toolResults(trace, "k8s_pods_list_in_namespace")
	if len(results) != 1 || results[0].Data["outcome"] != "ok" {
		t.Fatalf("tool results %+v", results)
	}
	out, _ := results[0].Data["output"].(string)
	for _, w := range []string{"oomkill-", "crashloop-", ns} {
		if !strings.Contains(out, w) {
			t.Errorf("the external tool's answer lacks %q:\n%s", w, out)
		}
	}
	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	offered := map[string]bool{}
	for _, tl := range reqs[0].Request.Tools {
		offered[tl.Function.Name] = true
	}
	if !offered["k8s_pods_list_in_namespace"] || !offered["k8s_events_list"] {
		t.Errorf("the allowed read tools were not offered: %v", offered)
	}
	// Annotated read-only but not on the persona's allowlist: mutating, gone from an autonomous run.
	if offered["k8s_namespaces_list"] || offered["k8s_resources_get"] {
		t.Errorf("a read tool off AGENT_MCP_READ_TOOLS was offered to an autonomous run: %v", offered)
	}
	sawAnswer := false
	for _, m := range reqs[1].Request.Messages {
		sawAnswer = sawAnswer || (m.Role == "tool" && strings.Contains(m.Content, "oomkill-"))
	}
	if !sawAnswer {
		t.Error("the model did not get the external tool's answer")
	}

	// /info lists the server, connected, with its tools and which are read-only.
	_, body := do(t, http.MethodGet, a.url+"/info", "")
	var info struct {
		MCP struct {
			Servers []struct {
				Name, State string
				ReadOnly    []string `json:"read_only"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.MCP.Servers) != 1 || info.MCP.Servers[0].State != "connected" || len(info.MCP.Servers[0].ReadOnly) != 3 {
		t.Errorf("/info mcp = %+v", info.MCP)
	}
}

// kubernetes-mcp-server with its write tools: an autonomous run is refused
// pods_delete (the name gate removed it; the model's call is denied), and
// the pod is still there on the API server.
func TestExternalMCPWriteToolRefusedInAnAutonomousRun(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-mcpwrite-%d", rand.IntN(1_000_000))
	ctx := t.Context()
	if err := env.LoadFixtures(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pods, err := env.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods: %v %d", err, len(pods.Items))
	}
	victim := pods.Items[0].Name
	model := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{Name: "k8s_pods_delete", Args: fmt.Sprintf(`{"namespace":%q,"name":%q}`, ns, victim)}),
		llmtest.Text("I could not delete the pod."),
		llmtest.Text(`{"verdict":"no_action","findings":[]}`), llmtest.Text(`{"verdict":"no_action","findings":[]}`))
	a := k8sMCPAgent(t, env, model, false)

	_, trace := runOn(t, a, api.RunRequest{Task: "Pod " + victim + " is stuck: fix it", WorkflowType: "alert",
		Context: map[string]string{"namespace": ns}})
	results := toolResults(trace, "k8s_pods_delete")
	if len(results) != 1 || results[0].Data["outcome"] != "denied" {
		t.Fatalf("k8s_pods_delete results %+v", results)
	}
	denied := false
	for _, ev := range trace {
		denied = denied || (ev.Type == "guard_denied" && ev.Data["tool"] == "k8s_pods_delete")
	}
	if !denied {
		t.Error("no guard_denied event for k8s_pods_delete")
	}
	for _, tl := range model.Requests()[0].Request.Tools {
		if strings.HasPrefix(tl.Function.Name, "k8s_") && tl.Function.Name != "k8s_get_resources" && strings.Contains(tl.Function.Name, "delete") {
			t.Errorf("a write tool was offered to an autonomous run: %s", tl.Function.Name)
		}
	}
	if _, err := env.Clientset.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{}); err != nil {
		t.Errorf("the pod is gone: %v", err)
	}
}

// A server that cannot start is reported in /ready (not required, so the
// agent stays ready) and /info; the agent starts without its tools.
func TestExternalMCPServerDownAtStart(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "AGENT_MCP_SERVERS": "gone=/nonexistent/mcp-server --read-only",
		"READY_REQUIRE": "store"})
	code, body := do(t, http.MethodGet, a.url+"/ready", "")
	if code != http.StatusOK || !strings.Contains(string(body), "down since start: gone: connecting to command /nonexistent/mcp-server") {
		t.Errorf("/ready = %d %s", code, body)
	}
	_, body = do(t, http.MethodGet, a.url+"/info", "")
	if !strings.Contains(string(body), `"state":"down"`) {
		t.Errorf("/info lacks the down server: %s", body)
	}
}

// Malformed settings fail the start, naming the variable.
func TestExternalMCPSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"AGENT_MCP_SERVERS=K8S=x", "AGENT_MCP_SERVERS"},
		{"AGENT_MCP_READ_TOOLS=k8s_[x", "AGENT_MCP_READ_TOOLS"},
	} {
		k, v, _ := strings.Cut(tc.env, "=")
		cfg, err := config.Load(envOf(map[string]string{"AGENT_PERSONA": "noor", k: v}), app.LoadPersona)
		if err == nil {
			_, err = app.New(t.Context(), cfg, app.Options{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v", tc.env, err)
		}
	}
}

// A stdio server inherits the agent's environment without its secrets, and
// what it answers is redacted before the model sees it (a manual run with
// a scripted model calling server-everything's get-env).
func TestExternalMCPChildEnvironment(t *testing.T) {
	cmd := mcptest.Everything(t)
	t.Setenv("GITHUB_TOKEN", "Pl4ntedGithubTok3n") // a setting of kind secret
	t.Setenv("KUBECREW_PLANTED_DB_PASSWORD", "Pl4ntedDbPassw0rd")
	model := llmtest.NewServer(t, llmtest.ToolCalls(llmtest.Call{Name: "ev_get-env", Args: `{}`}),
		llmtest.Text("read the environment"), llmtest.Text(`{"verdict":"no_action","findings":[]}`), llmtest.Text(`{"verdict":"no_action","findings":[]}`))
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_MCP_SERVERS": "ev=" + strings.Join(cmd, " "),
		"LLM_BASE_URL": model.URL(), "AGENT_MODEL": "test-model", "LLM_API_KEY": "k", "LLM_TIMEOUT": "20s", "SYNTHESIS_TIMEOUT": "10s",
		"AUTH_TOKEN": "mcp-token"}) // an interactive run: a person's, with the write token
	_, trace := runOn(t, a, api.RunRequest{Task: "what is in your environment?", WorkflowType: "manual"})
	results := toolResults(trace, "ev_get-env")
	if len(results) != 1 || results[0].Data["outcome"] != "ok" {
		t.Fatalf("results %+v", results)
	}
	out, _ := results[0].Data["output"].(string)
	if !strings.Contains(out, "KUBECREW_PLANTED_DB_PASSWORD") || strings.Contains(out, "GITHUB_TOKEN") {
		t.Errorf("child environment:\n%s", out)
	}
	for i, r := range model.Requests() {
		for _, s := range []string{"Pl4ntedGithubTok3n", "Pl4ntedDbPassw0rd"} {
			if strings.Contains(string(r.Raw), s) {
				t.Errorf("request %d to the model holds %s", i, s)
			}
		}
	}
}

// name=URL: one agent consumes another's POST /mcp over streamable HTTP.
// Noor's tools come over annotated read-only; Ada's allowlist takes two of
// them, and only those two are read-only (the rest are mutating to her).
func TestExternalMCPOverHTTP(t *testing.T) {
	noor := start(t, map[string]string{"AGENT_PERSONA": "noor"})
	ada := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_MCP_SERVERS": "noor=" + noor.url + "/mcp",
		"AGENT_MCP_READ_TOOLS": "noor_cluster_problems,noor_k8s_nodes"})
	_, body := do(t, http.MethodGet, ada.url+"/info", "")
	var info struct {
		Tools []struct {
			Name     string `json:"name"`
			Mutating bool   `json:"mutating"`
		} `json:"tools"`
		MCP struct {
			Servers []struct {
				Name, State, Transport string
				Tools                  []string `json:"tools"`
				ReadOnly               []string `json:"read_only"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.MCP.Servers) != 1 {
		t.Fatalf("/info mcp %s", body)
	}
	s := info.MCP.Servers[0]
	if s.State != "connected" || s.Transport != "http" || len(s.Tools) != 8 || strings.Join(s.ReadOnly, ",") != "noor_cluster_problems,noor_k8s_nodes" {
		t.Errorf("server %+v", s)
	}
	mutating := map[string]bool{}
	for _, tl := range info.Tools {
		mutating[tl.Name] = tl.Mutating
	}
	if m, ok := mutating["noor_cluster_problems"]; !ok || m {
		t.Errorf("noor_cluster_problems: given %v, mutating %v", ok, m)
	}
	if m, ok := mutating["noor_k8s_get_events"]; !ok || !m {
		t.Errorf("noor_k8s_get_events (off the allowlist): given %v, mutating %v", ok, m)
	}
}

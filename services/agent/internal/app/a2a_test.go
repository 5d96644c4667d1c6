package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// a2aServe builds an agent from env with app.New and serves it on l.
func a2aServe(t *testing.T, l net.Listener, env map[string]string, o app.Options) *app.App {
	t.Helper()
	cfg, err := config.Load(envOf(env), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return a
}

func a2aDo(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func a2aLog(t *testing.T, base, token string) []a2a.AuditItem {
	t.Helper()
	code, body := a2aDo(t, http.MethodGet, base+"/a2a/log?limit=50", token, "")
	if code != http.StatusOK {
		t.Fatalf("GET /a2a/log = %d %s", code, body)
	}
	var page a2a.AuditPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	return page.Items
}

// TestNoorDelegatesToSolOverA2A starts Noor and Sol as whole agents on
// loopback, pointing at each other through AGENT_PEERS with a shared
// AUTH_TOKEN. Noor's model (a scripted OpenAI-compatible server) calls
// delegate_task with the oomkill finding, then a tool that uses run.Delegate
// (the path of Noor's deterministic sweep); Sol runs deterministically.
// Both audit logs must hold the full instruction text.
func TestNoorDelegatesToSolOverA2A(t *testing.T) {
	const token = "fleet-secret"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noorURL, solURL := "http://"+ln.Addr().String(), "http://"+ls.Addr().String()
	peers := "noor=" + noorURL + ",sol=" + solURL

	finding := api.Finding{Severity: "critical", Kind: "Deployment", Namespace: "kubecrew-fixtures", Name: "oomkill",
		Container: "app", Reason: "OOMKilled", Detail: "container app OOMKilled 4 times in 10 minutes at 64Mi", Remediable: true, Confidence: 0.9}
	decision := "Raise the memory limit of Deployment kubecrew-fixtures/oomkill container app by 1.5x through a GitOps PR."
	evidence := "pod oomkill-7d9f: lastState.terminated.reason=OOMKilled, 4 restarts in 10m, limit 64Mi"
	sweepText := "Fix kubecrew-fixtures/oomkill (OOMKilled, container app): open the memory-bump PR."
	fjson, _ := json.Marshal(finding)
	model := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{Name: "delegate_task", Args: fmt.Sprintf(`{"agent_slug":"sol","decision":%q,"evidence":%q,"finding":%s}`, decision, evidence, fjson)}),
		llmtest.Text("Delegated the OOMKill to Sol."),
		llmtest.JSON(map[string]any{"healthy": false, "findings": []api.Finding{finding}, "verdict": "issues_found", "summary": "oomkill OOMKilled; delegated"}),
		llmtest.ToolCalls(llmtest.Call{Name: "sweep_delegate", Args: `{}`}),
		llmtest.Text("Delegated again, from code."),
		llmtest.JSON(map[string]any{"healthy": false, "findings": []api.Finding{finding}, "verdict": "issues_found", "summary": "delegated"}),
	)
	// sweep_delegate stands in for Noor's deterministic sweep: it calls
	// run.Delegate, which goes through the Delegator app.New installed.
	sweep := tools.New("sweep_delegate", "test: delegate the oomkill finding through run.Delegate", false,
		func(ctx context.Context, _ struct{}) (string, error) {
			d := engine.RunFrom(ctx).Delegate(ctx, "k8s-engineer", finding, sweepText)
			return fmt.Sprintf("sent=%v run=%s error=%s", d.Sent, d.RunID, d.Error), nil
		})

	a2aServe(t, ls, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill", "AGENT_PEERS": peers, "AUTH_TOKEN": token}, app.Options{})
	a2aServe(t, ln, map[string]string{
		"AGENT_PERSONA": "noor", "AGENT_TOOLS": "load_skill,sweep_delegate", "AGENT_PEERS": peers, "AUTH_TOKEN": token,
		"LLM_BASE_URL": model.URL(), "AGENT_MODEL": "test-model", "LLM_API_KEY": "k", "LLM_TIMEOUT": "5s", "SYNTHESIS_TIMEOUT": "2s",
	}, app.Options{ExtraTools: []tools.Tool{sweep}})

	// Every agent offers the three A2A tools.
	_, info := a2aDo(t, http.MethodGet, noorURL+"/info", token, "")
	for _, name := range []string{"ask_agent", "notify_agent", "delegate_task"} {
		if !strings.Contains(string(info), `"name":"`+name+`"`) {
			t.Errorf("/info lacks %s", name)
		}
	}
	// Sol's card points at its /invoke; /invoke wants the token.
	_, cardBody := a2aDo(t, http.MethodGet, solURL+a2a.CardPath, "", "")
	if !strings.Contains(string(cardBody), `"url":"`+solURL+`/invoke"`) || !strings.Contains(string(cardBody), `"name":"Sol"`) {
		t.Errorf("card = %s", cardBody)
	}
	if code, _ := a2aDo(t, http.MethodPost, solURL+"/invoke", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`); code != http.StatusUnauthorized {
		t.Errorf("POST /invoke without token = %d", code)
	}

	// Run 1: the model calls delegate_task.
	code, body := a2aDo(t, http.MethodPost, noorURL+"/run", token, `{"task":"Triage the OOMKill alert for kubecrew-fixtures/oomkill."}`)
	if code != http.StatusOK {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	var res api.RunResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Delegation == nil || !res.Delegation.Sent || res.Delegation.To != "k8s-engineer" || res.Delegation.RunID == "" ||
		res.Delegation.Finding.Key != "kubecrew-fixtures-deployment-oomkill-app-oomkilled" {
		t.Fatalf("delegation = %+v", res.Delegation)
	}
	solRun := res.Delegation.RunID
	t.Logf("sol answered: %s", res.Delegation.Result)

	// Run 2: run.Delegate through the installed Delegator.
	code, body = a2aDo(t, http.MethodPost, noorURL+"/run", token, `{"task":"Sweep."}`)
	var res2 api.RunResult
	if err := json.Unmarshal(body, &res2); err != nil || code != http.StatusOK {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	if res2.Delegation == nil || !res2.Delegation.Sent || res2.Delegation.RunID == "" || res2.Delegation.RunID == solRun {
		t.Fatalf("run.Delegate = %+v", res2.Delegation)
	}

	// Noor's log: both messages, full text, Sol's run ids, the outcome.
	fullText := decision + "\n\nEvidence:\n" + evidence
	want := map[string]string{fullText: solRun, sweepText: res2.Delegation.RunID}
	sent := a2aLog(t, noorURL, token)
	if len(sent) != 2 {
		t.Fatalf("noor's log = %+v", sent)
	}
	for _, e := range sent {
		if e.Direction != "sent" || e.Verb != "delegate" || e.Callee != "k8s-engineer" || e.Depth != 1 ||
			want[e.Text] == "" || e.CalleeRunID != want[e.Text] || e.CallerRunID == "" || e.Outcome == "pending" ||
			!strings.Contains(string(e.Data), `"reason":"OOMKilled"`) {
			t.Errorf("noor's entry = %+v", e)
		}
	}
	// Sol's log answers "who told you, and what exactly did they say?"
	recv := a2aLog(t, solURL, token)
	if len(recv) != 2 {
		t.Fatalf("sol's log = %+v", recv)
	}
	for _, e := range recv {
		if e.Direction != "received" || e.Caller != "platform-sre" || e.Verb != "delegate" || want[e.Text] == "" ||
			e.CalleeRunID != want[e.Text] || e.CallerRunID == "" || !strings.Contains(string(e.Data), `"container":"app"`) {
			t.Errorf("sol's entry = %+v", e)
		}
	}
	// Metrics on both sides.
	_, m := a2aDo(t, http.MethodGet, noorURL+"/metrics", "", "")
	if !strings.Contains(string(m), `kubecrew_a2a_messages_total{agent="platform-sre",direction="sent",outcome="completed",verb="delegate"} 2`) {
		t.Errorf("noor's metrics lack the two sent delegations")
	}
	_, m = a2aDo(t, http.MethodGet, solURL+"/metrics", "", "")
	if !strings.Contains(string(m), `kubecrew_a2a_messages_total{agent="k8s-engineer",direction="received",outcome="accepted",verb="delegate"} 2`) {
		t.Errorf("sol's metrics lack the two received delegations")
	}

	// Sol's run knows it was delegated, by whom, with which finding.
	_, runBody := a2aDo(t, http.MethodGet, solURL+"/runs/"+solRun, token, "")
	for _, w := range []string{`"workflow_type":"a2a-delegate"`, `"caller":"platform-sre"`, `"social_depth":1`, `\"name\":\"oomkill\"`, `"type":"a2a_received"`} {
		if !strings.Contains(string(runBody), w) {
			t.Errorf("sol's run lacks %s: %s", w, runBody)
		}
	}
}

// A standalone agent switches peers off with PEER_URL_TEMPLATE=none: an
// A2A call says peers are off instead of dialling an in-cluster address.
func TestPeersOffForAStandaloneAgent(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{Name: "ask_agent", Args: `{"agent_slug":"noor","question":"is the cluster healthy?"}`}),
		llmtest.Text("could not ask"), llmtest.Text("{}"))
	env := modelEnv(srv, "sol")
	env["PEER_URL_TEMPLATE"] = app.PeersOff
	a := start(t, env)
	code, b := do(t, "POST", a.url+"/run", `{"task":"ask noor"}`)
	if code != 200 {
		t.Fatalf("POST /run = %d %s", code, b)
	}
	var got string
	for _, r := range srv.Requests() {
		for _, m := range r.Request.Messages {
			if m.Role == "tool" {
				got += m.Content
			}
		}
	}
	if !strings.Contains(got, "peers are off") || strings.Contains(got, "svc:8000") {
		t.Errorf("the tool answer does not say peers are off: %q", got)
	}
}

package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// AGENT_TOKEN_BUDGET on the wire: a run's tokens and model calls are in its
// result; once the day's budget is spent the next run makes no model call
// and says so; /info and /metrics show what is left.
func TestTokenBudgetOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.WithUsage(llmtest.Text("Hello, I am Sol."), 27000, 1000), llmtest.Text("never asked"))
	env := modelEnv(srv, "sol")
	env["AGENT_TOKEN_BUDGET"] = "30000"
	env["AGENT_RUN_TOKEN_BUDGET"] = "0"
	a := start(t, env)

	var first api.RunResult
	code, body := do(t, "POST", a.url+"/run", `{"task":"hello"}`)
	if err := json.Unmarshal(body, &first); code != 200 || err != nil {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	if first.Status != api.StatusCompleted || first.ModelCalls != 1 || first.Tokens != (api.Tokens{Prompt: 27000, Completion: 1000}) {
		t.Fatalf("first run = %+v", first)
	}
	budget := func() (left *int, used int) {
		_, b := do(t, "GET", a.url+"/info", "")
		var info struct {
			TokenBudget struct {
				DailyLimit int  `json:"daily_limit"`
				UsedToday  int  `json:"used_today"`
				LeftToday  *int `json:"left_today"`
			} `json:"token_budget"`
		}
		if err := json.Unmarshal(b, &info); err != nil || info.TokenBudget.DailyLimit != 30000 {
			t.Fatalf("/info token_budget: %v %s", err, b)
		}
		return info.TokenBudget.LeftToday, info.TokenBudget.UsedToday
	}
	if left, used := budget(); left == nil || *left != 2000 || used != 28000 {
		t.Fatalf("after one run: left %v used %d", left, used)
	}
	_, m := do(t, "GET", a.url+"/metrics", "")
	for _, want := range []string{
		`kubecrew_agent_token_budget_left_tokens{agent="k8s-engineer"} 2000`,
		`kubecrew_agent_token_budget_used_tokens{agent="k8s-engineer"} 28000`,
		`kubecrew_agent_model_calls_total{agent="k8s-engineer",pass="loop",workflow_type="manual"} 1`,
		`kubecrew_agent_model_calls_total{agent="k8s-engineer",pass="synthesis",workflow_type="manual"} 0`,
	} {
		if !strings.Contains(string(m), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	var second api.RunResult
	_, body = do(t, "POST", a.url+"/run", `{"task":"Fix Deployment shop/api (container app): OOMKilled","workflow_type":"a2a-delegate"}`)
	if err := json.Unmarshal(body, &second); err != nil {
		t.Fatal(err)
	}
	if second.ModelCalls != 0 || chats(srv) != 1 || !strings.Contains(second.Answer, "token budget is spent, so this run used the deterministic playbook") {
		t.Fatalf("second run (%d chat requests) = %+v", chats(srv), second)
	}
	if !strings.Contains(second.Error, "AGENT_TOKEN_BUDGET=30000 has 2000 left") {
		t.Errorf("error = %q", second.Error)
	}
}

// chats counts the chat completion requests a scripted model received
// (readiness probes list the models).
func chats(srv *llmtest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Path == "/v1/chat/completions" {
			n++
		}
	}
	return n
}

package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
)

// The caller's budget travels in POST /run's body: a model that stalls
// cannot keep the run past it; the run ends failed and says which budget
// ran out. /info shows the chain of budgets.
func TestRunEndsWithinTheCallersBudget(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Hang())
	env := modelEnv(srv, "dax")
	env["LLM_TIMEOUT"], env["RUN_TIMEOUT"] = "60s", "120s"
	a := start(t, env)

	code, body := do(t, "POST", a.url+"/run", `{"task":"review the Dockerfile","budget_ms":800}`)
	if code != 200 {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	var res api.RunResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != api.StatusFailed || !strings.Contains(res.Error, "budget_ms 800") {
		t.Fatalf("result = %+v; want failed naming the caller's budget", res)
	}

	for _, bad := range []string{`{"task":"x","budget_ms":-1}`, `{"task":"x","budget_ms":20}`, `{"task":"x","budget_ms":"soon"}`} {
		if code, body := do(t, "POST", a.url+"/run", bad); code != 400 || !strings.Contains(string(body), "budget_ms") {
			t.Errorf("POST /run %s = %d %s; want 400 naming budget_ms", bad, code, body)
		}
	}

	_, ib := do(t, "GET", a.url+"/info", "")
	var info struct {
		Budget []app.InfoBudget `json:"budget"`
	}
	if err := json.Unmarshal(ib, &info); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, b := range info.Budget {
		steps = append(steps, b.Step+"="+b.Bound)
	}
	// Dax has a playbook (the deploy-path review): the model loop leaves
	// its fallback a share of the run budget.
	if got, want := strings.Join(steps, " "), "run=2m0s model loop=1m36s model call=1m0s synthesis attempt=2s A2A call=2m0s pulse run=2m0s"; got != want {
		t.Errorf("/info budget = %s\nwant            %s", got, want)
	}
}

// A caller of POST /run that stops waiting (its own timeout, or a hang-up)
// ends the run: nobody will read the answer. The run is recorded failed,
// saying so.
func TestRunEndsWhenTheCallerStopsWaiting(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Hang())
	env := modelEnv(srv, "dax")
	env["LLM_TIMEOUT"], env["RUN_TIMEOUT"] = "60s", "120s"
	a := start(t, env)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", a.url+"/run", strings.NewReader(`{"task":"review the Dockerfile"}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("POST /run answered %d; the model stalls, the run should still be working", resp.StatusCode)
	}
	// Without the cancel the run would hold on until RUN_TIMEOUT (120s).
	var run api.RunResult
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, body := do(t, "GET", a.url+"/runs?limit=1", "")
		var page struct{ Items []api.RunResult }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 1 && page.Items[0].Status != api.StatusRunning {
			run = page.Items[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is still %+v after its caller left", page.Items)
		}
		<-tick.C
	}
	if run.Status != api.StatusFailed || !strings.Contains(run.Error, "the caller hung up before the run finished") {
		t.Fatalf("run = %+v; want failed because the caller left", run)
	}
}

// Over AGENT_MAX_CONCURRENT_RUNS, POST /run answers 429 with Retry-After
// and the reason; the run is not started.
func TestRunOverCapacityAnswers429(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Hang())
	env := modelEnv(srv, "dax")
	env["LLM_TIMEOUT"], env["RUN_TIMEOUT"], env["AGENT_MAX_CONCURRENT_RUNS"] = "60s", "120s", "1"
	a := start(t, env)
	if code, body := do(t, "POST", a.url+"/run?async=1", `{"task":"review the Dockerfile"}`); code != 202 {
		t.Fatalf("first run: %d %s", code, body)
	}
	resp, err := http.Post(a.url+"/run", "application/json", strings.NewReader(`{"task":"review the Helm chart"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" ||
		!strings.HasPrefix(eb.Error, "busy: cicd-engineer has 1 runs in flight (AGENT_MAX_CONCURRENT_RUNS=1); retry after ") {
		t.Fatalf("second run: %d Retry-After %q %+v; want 429 busy", resp.StatusCode, resp.Header.Get("Retry-After"), eb)
	}
	if b, ok := api.ParseBusy(eb.Error); !ok || api.ParseRetryAfter(resp.Header.Get("Retry-After")) != b.RetryAfter {
		t.Errorf("Retry-After %q and the message %q disagree", resp.Header.Get("Retry-After"), eb.Error)
	}
}

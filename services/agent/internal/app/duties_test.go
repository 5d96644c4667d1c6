package app_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// runsOf lists an agent's finished runs of one workflow type.
func runsOf(t *testing.T, url, workflow string) []api.RunResult {
	t.Helper()
	_, b := do(t, "GET", url+"/runs?workflow_type="+workflow, "")
	var page struct {
		Items []api.RunResult `json:"items"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("/runs: %v %s", err, b)
	}
	var done []api.RunResult
	for _, r := range page.Items {
		if r.Status != api.StatusRunning {
			done = append(done, r)
		}
	}
	return done
}

// trace reads a run's trace events of one type.
func traceOf(t *testing.T, url, runID, typ string) []map[string]any {
	t.Helper()
	_, b := do(t, "GET", url+"/runs/"+runID, "")
	var v api.RunView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("/runs/%s: %v", runID, err)
	}
	var out []map[string]any
	for _, ev := range v.Trace {
		if ev.Type == typ {
			var m map[string]any
			_ = json.Unmarshal(ev.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

// With a model, Sol opening a PR and not telling Vera is a duty kept in
// code: his backstop notifies her, and she reviews the PR (her playbook,
// deterministic here). When the model told her itself, she is told once.
//
// The bump reads the OOM kill from the cluster right before its PR, so
// the fixtures' oomkill (killed at 32Mi, the manifest's limit) is loaded.
func TestSolNotifiesVeraWhenTheModelDidNot(t *testing.T) {
	cluster := kubetest.Start(t)
	ns := fmt.Sprintf("kc-duties-%d", rand.IntN(1_000_000_000))
	if err := cluster.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	finding, _ := json.Marshal(api.Finding{Severity: "critical", Kind: "Deployment", Namespace: ns, Name: "oomkill", Container: "app",
		Reason: "OOMKilled", Detail: "OOMKilled 293 times in 26h", Remediable: true, Confidence: 1})
	bump := llmtest.ToolCalls(llmtest.Call{Name: "bump_workload_memory",
		Args: `{"namespace":"` + ns + `","kind":"Deployment","name":"oomkill","container":"app","reason":"OOMKilled 293 times"}`})
	synth := llmtest.JSON(map[string]any{"healthy": false, "verdict": "action_taken", "summary": "PR opened", "findings": []any{}})
	for _, tc := range []struct {
		name     string
		script   []llmtest.Reply
		byBackup bool
	}{
		{"the model forgot", []llmtest.Reply{bump, llmtest.Text("Opened a memory-limit PR."), synth}, true},
		{"the model told her", []llmtest.Reply{bump,
			llmtest.ToolCalls(llmtest.Call{Name: "notify_agent", Args: `{"agent_slug":"vera","message":"Please review PR #1 (oomkill memory)."}`}),
			llmtest.Text("Opened a memory-limit PR and told Vera."), synth}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := fixturesRepo(t)
			vera := start(t, map[string]string{"AGENT_PERSONA": "vera", "GITOPS_FORGE": "local", "GITOPS_REPO": repo, "ACTIONS_NAMESPACES": ns})
			srv := llmtest.NewServer(t, tc.script...)
			env := modelEnv(srv, "sol")
			for k, v := range map[string]string{"AGENT_TOOLS": "bump_workload_memory", "GITOPS_FORGE": "local", "GITOPS_REPO": repo,
				"ACTIONS_NAMESPACES": ns, "AGENT_PEERS": "vera=" + vera.url, "KUBECONFIG": cluster.Kubeconfig} {
				env[k] = v
			}
			sol := start(t, env)
			body, _ := json.Marshal(api.RunRequest{Task: "Fix this finding.", WorkflowType: api.WorkflowA2ADelegate,
				Context: map[string]string{"finding": string(finding)}})
			code, b := do(t, "POST", sol.url+"/run", string(body))
			var res api.RunResult
			if err := json.Unmarshal(b, &res); code != 200 || err != nil || res.Verdict != api.VerdictActionTaken {
				t.Fatalf("sol /run = %d %s", code, b)
			}
			notes := 0
			for _, ev := range traceOf(t, sol.url, res.RunID, "tool_call") {
				if ev["name"] == "notify_agent" {
					notes++
					if (ev["id"] == "backstop-1") != tc.byBackup {
						t.Errorf("notify_agent call %v", ev)
					}
				}
			}
			if notes != 1 {
				t.Fatalf("Vera was told %d times", notes)
			}
			// Vera reviews the PR she was told about.
			var reviews []api.RunResult
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(reviews) == 0; time.Sleep(50 * time.Millisecond) {
				reviews = runsOf(t, vera.url, api.WorkflowA2AAsk)
			}
			if len(reviews) != 1 || reviews[0].Verdict != gitops.VerdictApprove || !strings.Contains(reviews[0].Answer, "Reviewed #1") {
				t.Fatalf("Vera's runs: %+v", reviews)
			}
		})
	}
}

// With a model, Vera reviews what her playbook would pick: the pick is made
// in code and given to the model; with nothing to review the model is not
// called; a model that did not submit a review is backed by her checks'
// verdict in code.
func TestVeraModelReviewsWhatHerPlaybookWouldPick(t *testing.T) {
	repo := fixturesRepo(t)
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	env := modelEnv(srv, "vera")
	for k, v := range map[string]string{"AGENT_TOOLS": "list_agent_prs,get_pr,review_pr,merge_if_trivial", "GITOPS_FORGE": "local", "GITOPS_REPO": repo,
		"ACTIONS_NAMESPACES": "shop"} {
		env[k] = v
	}
	vera := start(t, env)
	pulse := func() api.RunResult {
		t.Helper()
		code, b := do(t, "POST", vera.url+"/run", `{"task":"Review the oldest open agent PR you have not reviewed.","workflow_type":"pulse-task"}`)
		var res api.RunResult
		if err := json.Unmarshal(b, &res); code != 200 || err != nil {
			t.Fatalf("/run = %d %s", code, b)
		}
		return res
	}
	if res := pulse(); res.Verdict != "nothing_to_review" || res.ModelCalls != 0 || len(srv.Requests()) != 0 {
		t.Fatalf("empty queue: %d model requests, %+v", len(srv.Requests()), res)
	}

	sol := gitops.NewService(forge, "k8s-engineer", gitops.Options{})
	if _, err := sol.ProposeMemoryBump(t.Context(), gitops.BumpRequest{Namespace: "shop", Kind: "Deployment", Name: "oomkill", Container: "app"}); err != nil {
		t.Fatal(err)
	}
	srv.Push(llmtest.Text("The PR looks reasonable."), // no review submitted
		llmtest.JSON(map[string]any{"healthy": true, "verdict": "comment", "summary": "s", "findings": []any{}}))
	res := pulse()
	reqs := srv.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].Request.Messages[1].Content, "Review PR #1 (") {
		t.Fatalf("the model was not given the pick: %+v", reqs)
	}
	if res.Verdict != gitops.VerdictApprove || !strings.Contains(res.Answer, "Reviewed #1") {
		t.Fatalf("backstop review: %+v", res)
	}
	if ev := traceOf(t, vera.url, res.RunID, "backstop"); len(ev) != 1 || ev[0]["pr"] != float64(1) {
		t.Errorf("backstop events: %v", ev)
	}
	if rs, err := forge.Reviews(t.Context(), 1); err != nil || len(rs) != 1 || rs[0].Verdict != gitops.VerdictApprove {
		t.Errorf("reviews of #1: %+v %v", rs, err)
	}
	// Reviewed on its head: nothing left, and no model call for it.
	before := len(srv.Requests())
	if res := pulse(); res.Verdict != "nothing_to_review" || len(srv.Requests()) != before {
		t.Fatalf("after the review: %+v", res)
	}
}

package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// proposalsOf is the agents' envelopes as GET /actions/proposals answers.
type proposalsOf map[string][]kapi.ActionView

func (p proposalsOf) SetActions(context.Context, string, kapi.ActionsSwitch) (kapi.ActionsSwitch, error) {
	return kapi.ActionsSwitch{}, fmt.Errorf("no")
}
func (p proposalsOf) GetActions(context.Context, string) (kapi.ActionsSwitch, error) {
	return kapi.ActionsSwitch{}, fmt.Errorf("no")
}
func (p proposalsOf) Proposals(_ context.Context, slug string, _ int) ([]kapi.ActionView, error) {
	v, ok := p[slug]
	if !ok {
		return nil, fmt.Errorf("agent %s unreachable", slug)
	}
	return v, nil
}

// TestInvestigationReportListsWhatWaitsForAHuman: Sol's run in the chain
// proposed a memory bump (shadow mode); the report lists it with the exact
// diff, and leaves out another run's proposal and an unreachable agent.
func TestInvestigationReportListsWhatWaitsForAHuman(t *testing.T) {
	st := store.NewMemory(nil)
	ctx := context.Background()
	now := time.Now()
	if _, err := st.ApplyAlert(ctx, "fp1", "platform-sre", func(store.AlertState, bool, int) (store.AlertDecision, store.AlertState) {
		return store.AlertDecision{Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Status: "firing", Decision: store.DecisionDispatched,
				Agent: "platform-sre", InvestigationID: "inv1", At: now},
			store.AlertState{Fingerprint: "fp1", Agent: "platform-sre", Firing: true, FirstSeen: now, LastSeen: now}
	}, func(store.AlertDecision) *store.Investigation {
		return &store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Agent: "platform-sre", Status: "running", StartedAt: now}
	}); err != nil {
		t.Fatal(err)
	}
	fin := now.Add(time.Second)
	if err := st.FinishInvestigation(ctx, store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled",
		Agent: "platform-sre", RunID: "noor-1", Status: "completed", StartedAt: now, FinishedAt: &fin}); err != nil {
		t.Fatal(err)
	}
	agents := fakeAgents{runs: map[string]map[string]any{
		"platform-sre/noor-1": {"run_id": "noor-1", "status": "completed", "task": "triage",
			"delegation": map[string]any{"to": "k8s-engineer", "run_id": "sol-1", "sent": true, "finding": map[string]string{"key": "k"}},
			"trace":      []store.Event{{Type: "a2a_send", Data: []byte(`{"to":"k8s-engineer","callee_run_id":"sol-1"}`), Time: now}}},
		"k8s-engineer/sol-1": {"run_id": "sol-1", "status": "completed", "task": "fix it", "verdict": "recommendation",
			"answer": "PROPOSED, NOT DONE: gitops.pr.open shop/Deployment/cart"},
	}}
	diff := "--- a/apps/cart.yaml\n+++ b/apps/cart.yaml\n@@ -30,1 +30,1 @@\n-              memory: 256Mi\n+              memory: 384Mi\n"
	props := proposalsOf{
		"k8s-engineer": {
			{ID: "p1", Agent: "k8s-engineer", RunID: "sol-1", Action: "gitops.pr.open", Namespace: "shop", Kind: "Deployment", Name: "cart",
				Container: "app", Outcome: "proposed", Old: "256Mi", New: "384Mi", Change: diff, Why: "shadow mode (propose)", At: now},
			{ID: "p0", Agent: "k8s-engineer", RunID: "sol-0", Action: "k8s.rollout.restart", Namespace: "shop", Kind: "deployments",
				Name: "other-run", Outcome: "proposed", At: now.Add(-time.Hour)},
		},
	}
	r := chi.NewRouter()
	Routes(r, Deps{Store: st, Agents: agents, ActionsAgents: props, PeerTimeout: time.Second, Resolve: func(n string) (string, bool) { return n, true }})
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/investigations/inv1/report")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	html := string(body)
	if resp.StatusCode != 200 {
		t.Fatalf("= %d %s", resp.StatusCode, html)
	}
	for _, want := range []string{"Waiting for a human (1)", "<b>proposed</b> gitops.pr.open shop/Deployment/cart (app) 256Mi → 384Mi",
		"run <code>sol-1</code>", "-              memory: 256Mi\n&#43;              memory: 384Mi", "shadow mode (propose)"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "other-run") {
		t.Error("the report lists another run's proposal")
	}
}

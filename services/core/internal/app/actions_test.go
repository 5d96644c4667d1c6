package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// TestKillSwitchFansOutToEveryAgent: PUT /api/v1/actions (behind the
// core's token) stores the switch and sends it to every agent on the wire;
// an agent that does not take it makes the answer 502, naming it.
func TestKillSwitchFansOutToEveryAgent(t *testing.T) {
	t.Parallel()
	agents := map[string]*agenttest.Agent{}
	peers := map[string]string{}
	for _, a := range config.Fleet {
		if a.Slug == "platform-sre" {
			continue
		}
		agents[a.Slug] = agenttest.New(t, a.Slug)
		peers[a.Slug] = agents[a.Slug].URL()
	}
	c := newCore(t, coreOpts{peers: peers, env: map[string]string{"AUTH_TOKEN": "s3cret"}})
	agents["platform-sre"] = c.Agent
	auth := []string{"Authorization", "Bearer s3cret"}

	if code, _ := call(t, http.MethodPut, c.URL+"/api/v1/actions", []byte(`{"paused":true,"reason":"freeze"}`)); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
	for body, want := range map[string]string{
		`{"paused":true}`: `a pause needs a "reason"`,
		`{"reason":"x"}`:  `"paused" is required`,
		`{"paused":true,"reason":"x","at":"2026-01-01T00:00:00Z"}`: `set by the server`,
		`{"paused":"yes"}`:                        `body:`,
		`{"paused":true,"reason":"x","who":"me"}`: `unknown field "who"`,
	} {
		code, b := call(t, http.MethodPut, c.URL+"/api/v1/actions", []byte(body), auth...)
		if code != 400 || !strings.Contains(decode[kapi.ErrorBody](t, b).Error, want) {
			t.Errorf("%s: %d %s, want 400 %q", body, code, b, want)
		}
	}

	code, b := call(t, http.MethodPut, c.URL+"/api/v1/actions", []byte(`{"paused":true,"reason":"change freeze","by":"alice"}`), auth...)
	if code != 200 {
		t.Fatalf("pause: %d %s", code, b)
	}
	got := decode[api.ActionsAnswer](t, b)
	if !*got.Paused || !strings.HasPrefix(got.Line, "paused by alice at ") || !strings.HasSuffix(got.Line, ": change freeze") || len(got.Agents) != len(config.Fleet) {
		t.Fatalf("answer: %s", b)
	}
	for slug, a := range agents {
		if s := a.Actions(); !*s.Paused || s.Reason != "change freeze" || s.By != "alice" {
			t.Errorf("agent %s holds %+v", slug, s)
		}
	}
	st, err := c.Store.ActionsState(context.Background())
	if err != nil || !st.Paused || st.By != "alice" {
		t.Fatalf("core store: %+v %v", st, err)
	}
	code, b = call(t, http.MethodGet, c.URL+"/api/v1/actions", nil, auth...)
	if g := decode[api.ActionsAnswer](t, b); code != 200 || !*g.Paused || !allInSync(g) {
		t.Fatalf("GET: %d %s", code, b)
	}

	// One agent's store is down: the core still holds the switch, says who
	// did not take it, and answers 502.
	agents["k8s-engineer"].FailActions(true)
	code, b = call(t, http.MethodPut, c.URL+"/api/v1/actions", []byte(`{"paused":false,"by":"alice"}`), auth...)
	g := decode[api.ActionsAnswer](t, b)
	if code != 502 || *g.Paused {
		t.Fatalf("resume with a failing agent: %d %s", code, b)
	}
	for _, a := range g.Agents {
		if (a.Slug == "k8s-engineer") == a.InSync || (a.Slug == "k8s-engineer" && !strings.Contains(a.Error, "503")) {
			t.Errorf("agent %+v", a)
		}
	}
}

func allInSync(a api.ActionsAnswer) bool {
	for _, ag := range a.Agents {
		if !ag.InSync {
			return false
		}
	}
	return true
}

// TestProposalsAreMergedFromTheAgents: GET /api/v1/actions/proposals lists
// every agent's proposals and recommendations newest first, once each.
func TestProposalsAreMergedFromTheAgents(t *testing.T) {
	t.Parallel()
	sol := agenttest.New(t, "k8s-engineer")
	c := newCore(t, coreOpts{peers: map[string]string{"k8s-engineer": sol.URL()}})
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	p1 := kapi.ActionView{ID: "p1", Agent: "k8s-engineer", Action: "gitops.pr.open", Namespace: "shop", Kind: "Deployment", Name: "cart",
		Outcome: "proposed", Old: "256Mi", New: "384Mi", Change: "--- a/x\n+++ b/x\n", At: t0}
	p2 := kapi.ActionView{ID: "p2", Agent: "k8s-engineer", Action: "k8s.rollout.restart", Namespace: "shop", Kind: "deployments", Name: "web",
		Outcome: "recommended", Why: "budget", At: t0.Add(time.Hour)}
	sol.SetProposals([]kapi.ActionView{p2, p1})
	c.Agent.SetProposals([]kapi.ActionView{p1}) // a shared database: the same row twice
	code, b := call(t, http.MethodGet, c.URL+"/api/v1/actions/proposals?limit=10", nil)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	got := decode[struct {
		Items       []kapi.ActionView `json:"items"`
		Unreachable map[string]string `json:"unreachable"`
	}](t, b)
	if len(got.Items) != 2 || got.Items[0].ID != "p2" || got.Items[1].ID != "p1" || got.Items[1].Change == "" {
		t.Fatalf("items: %s", b)
	}
	if len(got.Unreachable) != len(config.Fleet)-2 {
		t.Errorf("unreachable: %v", got.Unreachable)
	}
	if code, _ := call(t, http.MethodGet, c.URL+"/api/v1/actions/proposals?limit=0", nil); code != 400 {
		t.Errorf("limit=0: %d", code)
	}
}

// TestUpkeepReassertsTheKillSwitch: an agent that restarted on a memory
// store forgot the pause; the core's next upkeep sends it again. A switch
// never set is not sent.
func TestUpkeepReassertsTheKillSwitch(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{})
	ctx := context.Background()
	c.Upkeep(ctx)
	if s := c.Agent.Actions(); *s.Paused || s.At != nil {
		t.Fatalf("a switch never set was sent: %+v", s)
	}
	if err := c.Store.SetActionsState(ctx, store.ActionsState{Paused: true, Reason: "freeze", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	c.Upkeep(ctx)
	if s := c.Agent.Actions(); !*s.Paused || s.Reason != "freeze" || s.By != "alice" {
		t.Fatalf("after upkeep the agent holds %+v", s)
	}
}

package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
	"github.com/kubecrew/kubecrew/services/core/internal/dashboard"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// now is the fixture's clock: the incident happened in the last hour.
var now = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

type fixture struct {
	URL     string
	Handler http.Handler
	Store   *store.Memory
	Noor    *agenttest.Agent
	Sol     *agenttest.Agent
	Vera    *agenttest.Agent
}

// newFixture is the core after a production-like incident: Noor triaged
// an OOM kill and delegated it, Sol opened a memory bump PR, Vera read its
// diff and would not merge it; around it a deduped repeat, a cooldown, an
// alert queued behind the running one, a resolved one, an ignored one, a
// malformed one, a failed investigation and one still running; Dax is down.
// On the forge (what Sol and Vera read): that PR #7, open; #8, opened by
// Sol's pulse (no investigation), which Vera could only comment on (one
// account for both); #5, which Vera asked changes of and a person merged
// on the forge since (Sol's older read still has it open).
func newFixture(t testing.TB, tokens httpauth.Tokens) *fixture {
	t.Helper()
	f := &fixture{Store: store.NewMemory(func() time.Time { return now })}
	f.Noor = agenttest.New(t, config.DefaultAlertAgent)
	f.Sol = agenttest.New(t, "k8s-engineer")
	f.Vera = agenttest.New(t, "code-reviewer")
	ada := agenttest.New(t, "backend-architect")
	peers := map[string]string{"platform-sre": f.Noor.URL(), "k8s-engineer": f.Sol.URL(), "code-reviewer": f.Vera.URL(),
		"backend-architect": ada.URL(), "cicd-engineer": "http://127.0.0.1:1"}
	client := dispatch.NewClient(peers, "", nil)
	var fleet []api.Registered
	for _, a := range config.Fleet {
		fleet = append(fleet, api.Registered{Slug: a.Slug, Persona: a.Persona, URL: peers[a.Slug], ReceivesAlerts: a.Slug == config.DefaultAlertAgent})
	}
	var prSources []api.Registered
	for _, slug := range config.ForgeAgents {
		prSources = append(prSources, api.Registered{Slug: slug, URL: peers[slug]})
	}
	inner := chi.NewRouter()
	deps := api.Deps{Store: f.Store, Agents: client, Fleet: fleet, PRSources: prSources, Resolve: config.ResolveAgent, PeerTimeout: 2 * time.Second,
		ActionsStore: f.Store, ActionsAgents: client}
	api.Routes(inner, deps)
	d, err := dashboard.New(dashboard.Deps{API: inner, Tokens: tokens, Index: api.Index("test"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	d.Routes(r)
	r.Group(func(r chi.Router) {
		r.Use(d.CookieOr(tokens.Middleware("kubecrew-core")))
		api.Routes(r, deps)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	f.URL, f.Handler = srv.URL, r
	f.seed(t)
	return f
}

func ev(run string, seq int, at time.Time, typ string, data map[string]any) kapi.TraceEvent {
	raw, _ := json.Marshal(data)
	return kapi.TraceEvent{RunID: run, Seq: seq, Time: at, Type: typ, Data: raw}
}

const prDiff = `--- a/apps/shop/checkout.yaml
+++ b/apps/shop/checkout.yaml
@@ -21,7 +21,7 @@ spec:
           resources:
             limits:
-              memory: 64Mi
+              memory: 96Mi
+      priorityClassName: system-cluster-critical`

func (f *fixture) seed(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	at := func(min int) time.Time { return now.Add(time.Duration(min) * time.Minute) }
	oom := kapi.Finding{Key: "shop/deployment/checkout/oomkilled/app", Severity: "critical", Kind: "Deployment", Namespace: "shop",
		Name: "checkout", Container: "app", Reason: "OOMKilled", Detail: "3 OOM kills in 10m at limit 64Mi", Remediation: "raise the memory limit", Remediable: true}
	stale := kapi.Finding{Key: "batch/job/report-2026-11-30/backofflimitexceeded", Severity: "medium", Kind: "Job", Namespace: "batch",
		Name: "report-2026-11-30", Reason: "BackoffLimitExceeded", Detail: "job failed yesterday; its pods are gone"}
	f.Noor.SetRun("noor-1", kapi.RunView{RunResult: kapi.RunResult{RunID: "noor-1", Agent: "platform-sre", WorkflowType: kapi.WorkflowAlert,
		Status: kapi.StatusCompleted, Verdict: "delegated", Answer: "checkout is OOM-killed at 64Mi; handed to Sol.", Findings: []kapi.Finding{oom, stale},
		StartedAt: at(-40), FinishedAt: ptr(at(-39)),
		Delegation: &kapi.Delegation{To: "k8s-engineer", Finding: oom, Sent: true, RunID: "sol-1", Result: "accepted"}},
		Task: "Investigate alert KubePodOOMKilled shop/checkout", Caller: "core",
		Trace: []kapi.TraceEvent{
			ev("noor-1", 1, at(-40), "run_start", map[string]any{"workflow_type": "alert"}),
			ev("noor-1", 2, at(-40), "tool_call", map[string]any{"id": "c1", "name": "cluster_problems", "args": map[string]string{"namespace": "shop"}}),
			ev("noor-1", 3, at(-40), "tool_result", map[string]any{"id": "c1", "name": "cluster_problems", "outcome": "ok", "output": "2 problems", "duration_ms": 41}),
			ev("noor-1", 4, at(-39), "a2a_send", map[string]any{"verb": "delegate", "to": "k8s-engineer", "callee_run_id": "sol-1", "outcome": "accepted"}),
		}})
	f.Noor.SetRun("noor-pulse-1", kapi.RunView{RunResult: kapi.RunResult{RunID: "noor-pulse-1", Agent: "platform-sre", WorkflowType: kapi.WorkflowPulseTask,
		Status: kapi.StatusCompleted, Verdict: "healthy", StartedAt: at(-15), FinishedAt: ptr(at(-14))}, Task: "pulse sweep"})
	f.Sol.SetRun("sol-1", kapi.RunView{RunResult: kapi.RunResult{RunID: "sol-1", Agent: "k8s-engineer", WorkflowType: kapi.WorkflowA2ADelegate,
		Status: kapi.StatusCompleted, Verdict: "pr_opened", Answer: "Opened PR #7.", StartedAt: at(-39), FinishedAt: ptr(at(-38))},
		Task: "Fix shop/checkout OOMKilled", Caller: "platform-sre", SocialDepth: 1,
		Trace: []kapi.TraceEvent{
			ev("sol-1", 1, at(-39), "tool_call", map[string]any{"id": "b1", "name": "bump_workload_memory", "args": map[string]string{"namespace": "shop", "name": "checkout"}}),
			ev("sol-1", 2, at(-38), "tool_result", map[string]any{"id": "b1", "name": "bump_workload_memory", "outcome": "ok",
				"output": "Opened PR #7: file:///srv/gitops.git#7\nbranch: agent/fix/shop-checkout-oomkilled\nfile: apps/shop/checkout.yaml\n", "duration_ms": 310}),
			ev("sol-1", 3, at(-38), "a2a_send", map[string]any{"verb": "notify", "to": "code-reviewer", "callee_run_id": "vera-1", "outcome": "accepted"}),
		}})
	f.Vera.SetRun("vera-1", kapi.RunView{RunResult: kapi.RunResult{RunID: "vera-1", Agent: "code-reviewer", WorkflowType: kapi.WorkflowA2AAsk,
		Status: kapi.StatusCompleted, Verdict: "request_changes", Answer: "PR #7 changes more than the limit.", StartedAt: at(-38), FinishedAt: ptr(at(-37))},
		Task: "Review PR #7", Caller: "k8s-engineer", SocialDepth: 2,
		Trace: []kapi.TraceEvent{
			ev("vera-1", 1, at(-38), "tool_result", map[string]any{"id": "g1", "name": "get_pr", "outcome": "ok",
				"output": "PR #7: raise shop/checkout memory\n\ndiff (312 characters):\n" + prDiff}),
			ev("vera-1", 2, at(-38), "tool_result", map[string]any{"id": "r1", "name": "review_pr", "outcome": "ok",
				"output": "1. only resources.limits.memory changes — FAIL (priorityClassName added)\nverdict: request_changes"}),
			ev("vera-1", 3, at(-37), "tool_result", map[string]any{"id": "m1", "name": "merge_if_trivial", "outcome": "ok",
				"output": "NOT MERGED — PR #7 stays open for a human: the diff changes more than the memory limit"}),
		}})
	f.seedPRs(at)
	f.Sol.SetProposals([]kapi.ActionView{{ID: "act-1", Agent: "k8s-engineer", RunID: "sol-0", Action: "rollout_restart", Namespace: "payments",
		Kind: "Deployment", Name: "ledger", Outcome: "recommended", Why: "over the restart budget (3 in 1h)", Change: "kubectl rollout restart deployment/ledger -n payments", At: at(-20)}})
	f.Noor.SetA2A([]map[string]any{{"id": "a2a-1", "at": at(-39), "direction": "out", "verb": "delegate", "peer": "k8s-engineer", "outcome": "accepted"}}, false)

	type step struct {
		fp, name, status, decision, agent, inv, reason string
		min                                            int
		finish                                         *store.Investigation
	}
	steps := []step{
		{"fp-oom", "KubePodOOMKilled", "firing", "dispatched", "platform-sre", "inv-oom", "new alert", -40,
			&store.Investigation{ID: "inv-oom", RunID: "noor-1", Status: kapi.StatusCompleted, Findings: []kapi.Finding{oom}, Answer: "handed to Sol"}},
		{"fp-oom", "KubePodOOMKilled", "firing", "deduped", "platform-sre", "", "deduped: investigation inv-oom covers it (same content)", -35, nil},
		{"fp-crash", "KubePodCrashLooping", "firing", "dispatched", "platform-sre", "inv-crash", "new alert", -30,
			&store.Investigation{ID: "inv-crash", Status: kapi.StatusFailed, Error: "agent platform-sre: no answer within 10m0s"}},
		{"fp-crash", "KubePodCrashLooping", "firing", "cooldown", "platform-sre", "", "cooldown until 2026-12-01T20:05:00Z (investigated 25m ago)", -25, nil},
		{"fp-disk", "NodeDiskPressure", "firing", "dispatched", "platform-sre", "inv-disk", "new alert", -10, nil},
		{"fp-cpu", "CPUThrottlingHigh", "firing", "busy", "platform-sre", "", "busy: platform-sre runs inv-disk; queued behind it", -9, nil},
		{"fp-old", "KubeJobFailed", "resolved", "resolved", "platform-sre", "", "resolved by Alertmanager", -8, nil},
		{"fp-watchdog", "Watchdog", "firing", "ignored", "platform-sre", "", "ignored by route Watchdog (always firing by design)", -7, nil},
	}
	for _, s := range steps {
		st := s
		d := store.AlertDecision{Fingerprint: st.fp, Alertname: st.name, Status: st.status, Decision: st.decision, Agent: st.agent,
			InvestigationID: st.inv, Reason: st.reason, At: at(st.min)}
		_, err := f.Store.ApplyAlert(ctx, st.fp, st.agent, func(store.AlertState, bool, int) (store.AlertDecision, store.AlertState) {
			return d, store.AlertState{Fingerprint: st.fp, Alertname: st.name, Agent: st.agent, Firing: st.status == "firing",
				FirstSeen: at(st.min), LastSeen: at(st.min), InFlight: st.inv != "", InvestigationID: st.inv}
		}, func(d store.AlertDecision) *store.Investigation {
			return &store.Investigation{ID: d.InvestigationID, Fingerprint: st.fp, Alertname: st.name, Agent: st.agent,
				Status: kapi.StatusRunning, Alert: []byte(`{"labels":{"alertname":"` + st.name + `"}}`), StartedAt: at(st.min)}
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.finish != nil {
			inv, err := f.Store.GetInvestigation(ctx, st.inv)
			if err != nil {
				t.Fatal(err)
			}
			inv.RunID, inv.Status, inv.Findings, inv.Answer, inv.Error = st.finish.RunID, st.finish.Status, st.finish.Findings, st.finish.Answer, st.finish.Error
			inv.FinishedAt = ptr(at(st.min + 3))
			if err := f.Store.FinishInvestigation(ctx, inv); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Store.RecordDecision(ctx, store.AlertDecision{Alertname: "", Status: "firing", Decision: "rejected",
		Reason: "alert 0: labels.alertname is missing", At: at(-5)}); err != nil {
		t.Fatal(err)
	}
}

// seedPRs sets what Sol and Vera read on the forge.
func (f *fixture) seedPRs(at func(int) time.Time) {
	pr := func(n int, title, state string, updated int, verdict, body string) kapi.PRView {
		v := kapi.PRView{Number: n, Title: title, URL: fmt.Sprintf("https://github.example/acme/gitops/pull/%d", n),
			Branch: fmt.Sprintf("agent/fix/pr-%d", n), Base: "main", Author: "k8s-engineer", Opener: "kubecrew-bot", State: state,
			Cluster: "default", CreatedAt: at(-300), UpdatedAt: at(updated)}
		if verdict != "" {
			v.Reviews, v.Review = 1, &kapi.ReviewView{Reviewer: "code-reviewer", Verdict: verdict, Body: body, At: at(updated)}
		}
		return v
	}
	changes := "1. only resources.limits.memory changes — FAIL (priorityClassName added)"
	opened := pr(7, "raise shop/checkout memory", "open", -37, "request_changes", changes)
	pulse := pr(8, "raise batch/report memory (pulse)", "open", -12, "comment",
		"The forge refuses an approval from the account that opened this PR: a person must approve and merge it.")
	human := pr(5, "raise web/api memory", "open", -200, "request_changes", changes)
	f.Sol.SetPRs(kapi.PRList{Forge: "github acme/gitops", Cluster: "default", AsOf: at(-1), Items: []kapi.PRView{opened, pulse, human}})
	human.State, human.UpdatedAt, human.Review, human.Reviews = "merged", at(-3), nil, 1
	f.Vera.SetPRs(kapi.PRList{Forge: "github acme/gitops", Cluster: "default", AsOf: at(0), Items: []kapi.PRView{opened, pulse, human}})
}

func ptr[T any](v T) *T { return &v }

// record decides d for its alert in the store as the pipeline would (the
// alert's state keyed by its fingerprint).
func record(t testing.TB, st *store.Memory, d store.AlertDecision) {
	t.Helper()
	_, err := st.ApplyAlert(context.Background(), d.Fingerprint, d.Agent, func(store.AlertState, bool, int) (store.AlertDecision, store.AlertState) {
		return d, store.AlertState{Fingerprint: d.Fingerprint, Alertname: d.Alertname, Agent: d.Agent, Firing: d.Status == "firing", FirstSeen: d.At, LastSeen: d.At}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// get fetches path as a browser would.
func get(t testing.TB, url string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp.StatusCode, string(b), resp.Header
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

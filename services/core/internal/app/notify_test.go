package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

// chat is a chat webhook on the wire: it records every post it accepted
// (body and query) and answers 500 to the first fail posts. As a Discord
// forum it answers ?wait=true with the message and its thread.
type chat struct {
	mu       sync.Mutex
	posts    []chatPost
	requests int
	fail     int
	srv      *httptest.Server
}

type chatPost struct {
	Query url.Values
	Body  map[string]any
	Raw   string
}

func newChat(t *testing.T, fail int) *chat {
	c := &chat{fail: fail}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if c.fail > 0 {
			c.fail--
			http.Error(w, `{"message": "upstream hiccup"}`, http.StatusInternalServerError)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		c.posts = append(c.posts, chatPost{Query: r.URL.Query(), Body: m, Raw: string(raw)})
		if r.URL.Query().Get("wait") == "true" {
			thread := r.URL.Query().Get("thread_id")
			if thread == "" {
				thread = "thread-1"
			}
			kapi.WriteJSON(w, 200, map[string]string{"id": "msg-" + thread, "channel_id": thread})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *chat) snapshot() ([]chatPost, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]chatPost(nil), c.posts...), c.requests
}

func ev(typ string, data map[string]string) kapi.TraceEvent {
	raw, _ := json.Marshal(data)
	return kapi.TraceEvent{Type: typ, Data: raw, Time: time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)}
}

// incidentChain makes the fake agents play Noor → Sol → Vera: Noor's run
// finds two problems (one new, one still open) and resolves a third, and
// delegates the OOM kill; Sol opens PR #1; Vera approves and merges it.
func incidentChain(t *testing.T, noor *agenttest.Agent, peers map[string]string) {
	sol, vera := agenttest.New(t, "k8s-engineer"), agenttest.New(t, "code-reviewer")
	peers["k8s-engineer"], peers["code-reviewer"] = sol.URL(), vera.URL()
	since := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	resolvedAt := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	oom := kapi.Finding{Key: "shop-deployment-cart-app-oomkilled", Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "cart",
		Container: "app", Reason: "OOMKilled", Detail: "container app OOMKilled (exit 137), restarts 4, memory limit 32Mi", Remediable: true, Cluster: "prod-eu"}
	crash := kapi.Finding{Key: "shop-deployment-api-app-crashloopbackoff", Severity: "high", Kind: "Deployment", Namespace: "shop", Name: "api",
		Container: "app", Reason: "CrashLoopBackOff", Detail: "crash-looping, restarts 6", Cluster: "prod-eu"}
	gone := kapi.Finding{Key: "shop-deployment-web-imagepullbackoff", Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "web",
		Reason: "ImagePullBackOff", Cluster: "prod-eu"}
	noor.Reply(func(req kapi.RunRequest) (int, any) {
		fin := resolvedAt.Add(time.Second)
		return 200, kapi.RunResult{RunID: "noor-1", Agent: "platform-sre", WorkflowType: req.WorkflowType, Status: "completed",
			Verdict: "delegated", Answer: "6 problems; delegated the OOM kill", Findings: []kapi.Finding{crash, oom},
			StartedAt: resolvedAt, FinishedAt: &fin,
			Delegation: &kapi.Delegation{To: "k8s-engineer", Finding: oom, Sent: true, RunID: "sol-1", Verdict: "action_taken",
				Result: "Opened PR #1: https://github.com/acme/gitops/pull/1\nbranch: agent/fix/x"},
			Lifecycle: &kapi.Lifecycle{Cluster: "prod-eu", Scope: "shop", Complete: true, Changes: []kapi.LifecycleChange{
				{Change: "new", Finding: oom, FirstSeen: resolvedAt},
				{Change: "open", Finding: crash, FirstSeen: since},
				{Change: "resolved", Finding: gone, FirstSeen: since, ResolvedAt: &resolvedAt},
			}}}
	})
	noor.SetRun("noor-1", map[string]any{"run_id": "noor-1", "agent": "platform-sre", "status": "completed", "task": "triage",
		"delegation": map[string]any{"to": "k8s-engineer", "run_id": "sol-1", "sent": true, "finding": oom},
		"trace":      []kapi.TraceEvent{ev("a2a_send", map[string]string{"to": "k8s-engineer", "callee_run_id": "sol-1"})}})
	sol.SetRun("sol-1", map[string]any{"run_id": "sol-1", "agent": "k8s-engineer", "status": "completed", "verdict": "action_taken",
		"answer": "Opened PR #1", "task": "fix it", "trace": []kapi.TraceEvent{
			ev("tool_result", map[string]string{"name": "bump_workload_memory", "outcome": "ok",
				"output": "Opened PR #1: https://github.com/acme/gitops/pull/1\nbranch: agent/fix/shop-deployment-cart-app-oomkilled\n"}),
			ev("a2a_send", map[string]string{"verb": "notify", "to": "code-reviewer", "callee_run_id": "vera-1", "outcome": "accepted"}),
		}})
	vera.SetRun("vera-1", map[string]any{"run_id": "vera-1", "agent": "code-reviewer", "status": "completed", "task": "review", "verdict": "approve",
		"trace": []kapi.TraceEvent{ev("tool_result", map[string]string{"name": "merge_if_trivial", "outcome": "ok",
			"output": "MERGED PR #1: memory limit 32Mi -> 48Mi is now on main."})}})
}

// An alert's investigation is posted exactly once to each chat its route
// names — the findings by severity with their lifecycle, the PR and its
// link, the review — a failed delivery is retried and posts once, a
// repeated alert posts nothing more, and its resolution follows up once
// in the same thread (a Discord forum thread; the generic webhook's thread
// key).
func TestInvestigationPostedOnceToChat(t *testing.T) {
	t.Run("memory", func(t *testing.T) { postedOnce(t, store.NewMemory(nil)) })
	t.Run("postgres", func(t *testing.T) { postedOnce(t, openPG(t, pgSchema(t))) })
}

// stampStore is a core store that shows its post stamps.
type stampStore interface {
	store.CoreStore
	LastDelivery(ctx context.Context, agent, task, target string) (store.DeliveryStamp, error)
}

func postedOnce(t *testing.T, st stampStore) {
	generic, discord := newChat(t, 0), newChat(t, 2)
	peers := map[string]string{}
	noor := agenttest.New(t, "platform-sre")
	incidentChain(t, noor, peers)
	c := newCore(t, coreOpts{store: st, peers: peers, notifyRetry: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}, env: map[string]string{
		"AGENT_PEERS":         "platform-sre=" + noor.URL(),
		"REPORT_WEBHOOK_URL":  generic.srv.URL + "/hook",
		"DISCORD_WEBHOOK_URL": discord.srv.URL + "/api/webhooks/1/secret",
		"DISCORD_FORUM":       "true",
		"NOTIFY_SETTLE":       "10s",
		"CORE_PUBLIC_URL":     "https://kubecrew.example.com",
	}})
	send := func(status string) {
		code, body, _ := do(t, "POST", c.URL+"/api/v1/alerts", webhookBody(alert("fp-cart", "KubePodOOMKilled", "shop", status)))
		if code != 200 {
			t.Fatalf("webhook = %d %s", code, body)
		}
		c.WaitIdle()
	}
	send("firing")
	send("firing") // deduped or in cooldown: no second investigation, no second post

	posts, _ := generic.snapshot()
	if len(posts) != 1 {
		t.Fatalf("generic webhook got %d posts, want exactly 1: %+v", len(posts), posts)
	}
	text, _ := posts[0].Body["text"].(string)
	invs, _, _ := st.ListInvestigations(t.Context(), store.Page{})
	if len(invs) != 1 {
		t.Fatalf("investigations = %d, want 1", len(invs))
	}
	id := invs[0].ID
	for _, want := range []string{
		"Alert KubePodOOMKilled in shop — 2 problems (1 critical, 1 high) — 1 resolved",
		"🔴 shop/Deployment/cart (app) — OOMKilled — container app OOMKilled (exit 137)",
		"· new",
		"🟠 shop/Deployment/api (app) — CrashLoopBackOff — crash-looping, restarts 6 · still open since 2026-11-29 07:00 UTC",
		"✅ resolved — shop/Deployment/web — ImagePullBackOff · resolved (open since 2026-11-29 07:00 UTC)",
		"Done: merged — PR #1 merged by code-reviewer",
		"PR: https://github.com/acme/gitops/pull/1",
		"Delegated to k8s-engineer: delegated (action_taken)",
		"Review: code-reviewer — approve",
		"Report: https://kubecrew.example.com/api/v1/investigations/" + id + "/report",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the post lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "🔴") > strings.Index(text, "🟠") {
		t.Errorf("the most severe finding is not first:\n%s", text)
	}
	if posts[0].Body["thread"] != "investigation/"+id || posts[0].Body["username"] != "kubecrew" {
		t.Errorf("generic post thread/username = %v/%v", posts[0].Body["thread"], posts[0].Body["username"])
	}
	if fs, _ := posts[0].Body["findings"].([]any); len(fs) != 2 {
		t.Errorf("generic post carries %d findings, want 2", len(fs))
	}
	dposts, requests := discord.snapshot()
	if len(dposts) != 1 || requests != 3 {
		t.Fatalf("discord: %d posts accepted of %d requests, want 1 of 3 (two failures, retried)", len(dposts), requests)
	}
	if dposts[0].Body["thread_name"] == nil || dposts[0].Query.Get("wait") != "true" {
		t.Errorf("the forum post opens no thread: %s ?%s", dposts[0].Raw, dposts[0].Query.Encode())
	}
	stamp, err := st.LastDelivery(t.Context(), "core", "investigation/"+id, "discord")
	if err != nil || stamp.Thread != "thread-1" {
		t.Errorf("discord stamp = %+v %v, want the thread kept", stamp, err)
	}

	send("resolved")
	send("resolved") // a second resolved notice posts nothing more
	posts, _ = generic.snapshot()
	dposts, _ = discord.snapshot()
	if len(posts) != 2 || len(dposts) != 2 {
		t.Fatalf("after the resolution: %d generic and %d discord posts, want 2 each", len(posts), len(dposts))
	}
	if title, _ := posts[1].Body["title"].(string); !strings.HasPrefix(title, "✅ Resolved: Alert KubePodOOMKilled in shop") || posts[1].Body["thread"] != "investigation/"+id {
		t.Errorf("generic follow-up = %s", posts[1].Raw)
	}
	if dposts[1].Query.Get("thread_id") != "thread-1" || dposts[1].Body["thread_name"] != nil {
		t.Errorf("discord follow-up is not in the investigation's thread: ?%s %s", dposts[1].Query.Encode(), dposts[1].Raw)
	}
}

// Nothing posts for an ignored alert or a fixture namespace (the built-in
// routes' notify: []), though the fixture alert is investigated.
func TestNoPostForIgnoredOrFixtureAlerts(t *testing.T) {
	generic := newChat(t, 0)
	c := newCore(t, coreOpts{env: map[string]string{"REPORT_WEBHOOK_URL": generic.srv.URL}})
	for _, a := range []map[string]any{alert("fp-w", "Watchdog", "monitoring", "firing"), alert("fp-f", "KubePodOOMKilled", "kubecrew-fixtures", "firing")} {
		if code, body, _ := do(t, "POST", c.URL+"/api/v1/alerts", webhookBody(a)); code != 200 {
			t.Fatalf("webhook = %d %s", code, body)
		}
	}
	c.WaitIdle()
	if n := c.Agent.RunsFor("fp-f"); n != 1 {
		t.Errorf("the fixture alert was investigated %d times, want 1", n)
	}
	if posts, requests := generic.snapshot(); requests != 0 {
		t.Errorf("chat got %d requests (%+v), want none", requests, posts)
	}
}

// A receiver that keeps failing: every retry is made, nothing is stamped,
// and the post is given up (logged), never marked as posted.
func TestChatPostGivenUpIsNotStamped(t *testing.T) {
	generic := newChat(t, 100)
	st := store.NewMemory(nil)
	c := newCore(t, coreOpts{store: st, notifyRetry: []time.Duration{time.Millisecond, time.Millisecond},
		env: map[string]string{"REPORT_WEBHOOK_URL": generic.srv.URL, "NOTIFY_SETTLE": "50ms"}})
	if code, body, _ := do(t, "POST", c.URL+"/api/v1/alerts", webhookBody(alert("fp-x", "KubePodCrashLooping", "shop", "firing"))); code != 200 {
		t.Fatalf("webhook = %d %s", code, body)
	}
	c.WaitIdle()
	if _, requests := generic.snapshot(); requests != 3 {
		t.Errorf("requests = %d, want 3 (the first and two retries)", requests)
	}
	invs, _, _ := st.ListInvestigations(t.Context(), store.Page{})
	if _, err := st.LastDelivery(t.Context(), "core", "investigation/"+invs[0].ID, "webhook"); err == nil {
		t.Error("a post that never went through was stamped")
	}
}

// GET /api/v1/findings/lifecycle asks every agent with the same filters and
// merges their answers: one item per cluster and key (two agents on one
// database answer the same lives), newest first by first sighting; an
// agent without the route is "unsupported"; a bad filter is a 400.
func TestFindingLivesMergeTheAgents(t *testing.T) {
	noor, sol := agenttest.New(t, "platform-sre"), agenttest.New(t, "k8s-engineer")
	c := newCore(t, coreOpts{env: map[string]string{"AGENT_PEERS": "platform-sre=" + noor.URL()}, peers: map[string]string{"k8s-engineer": sol.URL()}})
	day := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	life := func(cluster, key string, first time.Time, seen time.Time) kapi.FindingStateView {
		return kapi.FindingStateView{Cluster: cluster, Key: key, State: "open", Agent: "platform-sre", RunID: "r",
			FirstSeen: first, LastSeen: seen, Finding: kapi.Finding{Key: key, Severity: "critical", Kind: "Deployment",
				Namespace: "shop", Name: key, Reason: "OOMKilled", Cluster: cluster}}
	}
	noor.SetLives([]kapi.FindingStateView{life("prod-eu", "a", day, day.Add(time.Hour)), life("prod-eu", "b", day.Add(time.Hour), day.Add(time.Hour))})
	sol.SetLives([]kapi.FindingStateView{life("prod-eu", "a", day, day.Add(2*time.Hour)), life("prod-us", "a", day.Add(-time.Hour), day)})
	code, body := call(t, "GET", c.URL+"/api/v1/findings/lifecycle?severity=critical&namespace=shop", nil)
	if code != 200 {
		t.Fatalf("= %d %s", code, body)
	}
	got := decode[struct {
		Items   []kapi.FindingStateView `json:"items"`
		Sources []struct{ Agent, Status string }
	}](t, body)
	var keys []string
	for _, it := range got.Items {
		keys = append(keys, it.Cluster+"/"+it.Key+"@"+it.LastSeen.Format("15"))
	}
	if strings.Join(keys, " ") != "prod-eu/b@08 prod-eu/a@09 prod-us/a@07" {
		t.Errorf("merged lives = %v, want b, then a once (the latest sighting), then prod-us's a", keys)
	}
	if q := noor.LivesQuery(); !strings.Contains(q, "severity=critical") || !strings.Contains(q, "namespace=shop") || !strings.Contains(q, "limit=50") {
		t.Errorf("the agent was asked %q, want the filters and the limit", q)
	}
	statuses := map[string]string{}
	for _, s := range got.Sources {
		statuses[s.Agent] = s.Status
	}
	if statuses["platform-sre"] != "ok" || statuses["k8s-engineer"] != "ok" || statuses["code-reviewer"] == "ok" {
		t.Errorf("sources = %v", got.Sources)
	}
	for _, bad := range []string{"?state=closed", "?severity=urgent", "?since=yesterday", "?cursor=abc", "?sevrity=high"} {
		if code, body := call(t, "GET", c.URL+"/api/v1/findings/lifecycle"+bad, nil); code != 400 || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s = %d %s, want 400 with an error", bad, code, body)
		}
	}
}

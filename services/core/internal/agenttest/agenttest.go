// Package agenttest is a fake kubecrew agent on the wire (httptest):
// POST /run, GET /info, GET /health, GET /a2a/log. It records every run
// request, so tests count dispatches the way an agent would see them.
package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Agent is a fake agent.
type Agent struct {
	Slug   string
	Server *httptest.Server

	mu    sync.Mutex
	runs  []Call
	n     int
	gate  chan struct{}
	reply func(req api.RunRequest) (int, any)
	a2a   []map[string]any
	noA2A bool
	info  map[string]any
	// the action envelope's kill switch and proposals (PUT/GET /actions)
	actions   api.ActionsSwitch
	proposals []api.ActionView
	noActions bool
	// views are GET /runs/{id} answers (SetRun)
	views map[string]any
	// lives answer GET /findings/lifecycle (SetLives); livesQuery is the
	// last query it got
	lives      []api.FindingStateView
	livesQuery string
	// prs answers GET /prs (SetPRs); nil: no GitOps repository
	prs *api.PRList
}

// Call is one POST /run the agent received.
type Call struct {
	Request       api.RunRequest
	Authorization string
	Async         bool
}

// New starts a fake agent; it stops at test cleanup. By default a run
// completes at once with one finding named after context.alertname.
func New(t interface {
	Cleanup(func())
	Helper()
}, slug string) *Agent {
	t.Helper()
	a := &Agent{Slug: slug}
	a.info = map[string]any{
		"agent":    map[string]string{"persona": "noor", "slug": slug},
		"version":  "test",
		"model":    "none",
		"store":    "memory",
		"settings": map[string]any{"AGENT_MODEL": map[string]string{"value": "none", "source": "env"}},
		"tools": []map[string]any{
			{"name": "cluster_problems", "description": "List cluster problems.", "mutating": false, "parameters": map[string]any{"type": "object"}},
			{"name": "report_finding", "description": "Record a finding.", "mutating": false, "parameters": map[string]any{"type": "object"}},
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /run", a.run)
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		api.WriteJSON(w, 200, a.info)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { api.WriteJSON(w, 200, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /a2a/log", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.noA2A {
			http.NotFound(w, nil)
			return
		}
		api.WriteJSON(w, 200, map[string]any{"items": a.a2a, "next_cursor": ""}) // pkg/a2a.AuditPage
	})
	f := false
	a.actions = api.ActionsSwitch{Paused: &f}
	mux.HandleFunc("GET /actions", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		api.WriteJSON(w, 200, a.actions)
	})
	mux.HandleFunc("PUT /actions", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.noActions {
			api.WriteJSON(w, 503, api.ErrorBody{Error: "store: unavailable"})
			return
		}
		var in api.ActionsSwitch
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Paused == nil {
			api.WriteJSON(w, 400, api.ErrorBody{Error: fmt.Sprintf("bad body: %v", err)})
			return
		}
		now := time.Now().UTC()
		in.At = &now
		a.actions = in
		api.WriteJSON(w, 200, a.actions)
	})
	mux.HandleFunc("GET /actions/proposals", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		api.WriteJSON(w, 200, map[string]any{"items": a.proposals})
	})
	mux.HandleFunc("GET /findings/lifecycle", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.livesQuery = r.URL.RawQuery
		if a.lives == nil {
			http.NotFound(w, r)
			return
		}
		api.WriteJSON(w, 200, map[string]any{"items": a.lives})
	})
	mux.HandleFunc("GET /runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		v, ok := a.views[r.PathValue("id")]
		if !ok {
			api.WriteJSON(w, 404, api.ErrorBody{Error: "no run " + r.PathValue("id")})
			return
		}
		api.WriteJSON(w, 200, v)
	})
	mux.HandleFunc("GET /runs", a.listRuns)
	mux.HandleFunc("GET /prs", a.listPRs)
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Server.Close)
	return a
}

// URL is the agent's base URL.
func (a *Agent) URL() string { return a.Server.URL }

// Gate makes every run wait for a token on the returned channel (send one
// per run to let it finish; close to release all).
func (a *Agent) Gate() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gate = make(chan struct{})
	return a.gate
}

// Reply sets the answer to each run: status code and body (an
// *api.BusyError body is answered as an agent at capacity does, with
// Retry-After).
func (a *Agent) Reply(f func(req api.RunRequest) (int, any)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reply = f
}

// SetRun sets the answer of GET /runs/{id} (a run view: the result, task
// and trace).
func (a *Agent) SetRun(id string, view any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.views == nil {
		a.views = map[string]any{}
	}
	a.views[id] = view
}

// SetLives sets what GET /findings/lifecycle lists (nil: 404, an agent
// without the route).
func (a *Agent) SetLives(items []api.FindingStateView) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lives = items
}

// LivesQuery is the query of the last GET /findings/lifecycle.
func (a *Agent) LivesQuery() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.livesQuery
}

// SetA2A sets the A2A log entries; nil entries with missing=true answers 404.
func (a *Agent) SetA2A(entries []map[string]any, missing bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.a2a, a.noA2A = entries, missing
}

// SetSetting sets one setting of GET /info, as the agent would report it.
func (a *Agent) SetSetting(name, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.info["settings"].(map[string]any)[name] = map[string]string{"value": value, "source": "env"}
}

// Actions returns the kill switch the agent holds.
func (a *Agent) Actions() api.ActionsSwitch {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.actions
}

// FailActions makes PUT /actions answer 503 (an agent whose store is down).
func (a *Agent) FailActions(fail bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.noActions = fail
}

// SetProposals sets what GET /actions/proposals lists.
func (a *Agent) SetProposals(ps []api.ActionView) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.proposals = ps
}

// Runs returns every run request received so far.
func (a *Agent) Runs() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.runs...)
}

// RunsFor counts the runs whose context.fingerprint is fp.
func (a *Agent) RunsFor(fp string) int {
	n := 0
	for _, c := range a.Runs() {
		if c.Request.Context["fingerprint"] == fp || c.Request.Context["correlation_key"] == fp {
			n++
		}
	}
	return n
}

func (a *Agent) run(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Task == "" {
		api.WriteJSON(w, 400, api.ErrorBody{Error: fmt.Sprintf("bad run request: %v", err)})
		return
	}
	a.mu.Lock()
	a.runs = append(a.runs, Call{Request: req, Authorization: r.Header.Get("Authorization"), Async: r.URL.Query().Get("async") == "1"})
	a.n++
	n := a.n
	gate, reply := a.gate, a.reply
	a.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if reply != nil {
		code, body := reply(req)
		if b, ok := body.(*api.BusyError); ok { // as an agent at capacity answers
			w.Header().Set("Retry-After", strconv.Itoa(api.RetryAfterSeconds(b.RetryAfter)))
			body = api.ErrorBody{Error: b.Error()}
		}
		api.WriteJSON(w, code, body)
		return
	}
	started := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	finished := started.Add(time.Second)
	res := api.RunResult{
		RunID: fmt.Sprintf("run-%s-%d", a.Slug, n), Agent: a.Slug, WorkflowType: req.WorkflowType, Status: api.StatusCompleted,
		Answer: "triaged " + req.Context["alertname"], Iterations: 2, StartedAt: started, FinishedAt: &finished,
		Findings: []api.Finding{{
			Key: "prod-pod-api-1-crashloopbackoff", Severity: api.SeverityHigh, Kind: "Pod", Namespace: req.Context["namespace"],
			Name: "api-1", Reason: "CrashLoopBackOff", Detail: "alert " + req.Context["alertname"], Remediation: "restart", Remediable: true, Confidence: 0.9,
		}},
	}
	if r.URL.Query().Get("async") == "1" {
		res.Status, res.FinishedAt, res.Findings = api.StatusRunning, nil, []api.Finding{}
		api.WriteJSON(w, http.StatusAccepted, res)
		return
	}
	api.WriteJSON(w, 200, res)
}

// listRuns is GET /runs: the runs SetRun stored, newest first, filtered by
// ?workflow_type= and ?status=, at most ?limit= (no cursor: one page).
func (a *Agent) listRuns(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			api.WriteJSON(w, 400, api.ErrorBody{Error: "limit must be a whole number from 1 to 500"})
			return
		}
		limit = n
	}
	items := []api.RunResult{}
	for _, v := range a.views {
		raw, _ := json.Marshal(v)
		var rr api.RunResult
		if json.Unmarshal(raw, &rr) != nil {
			continue
		}
		if (q.Get("workflow_type") == "" || rr.WorkflowType == q.Get("workflow_type")) && (q.Get("status") == "" || rr.Status == q.Get("status")) {
			items = append(items, rr)
		}
	}
	slices.SortFunc(items, func(x, y api.RunResult) int {
		if c := y.StartedAt.Compare(x.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(y.RunID, x.RunID)
	})
	if len(items) > limit {
		items = items[:limit]
	}
	api.WriteJSON(w, 200, map[string]any{"items": items, "next_cursor": ""})
}

// SetPRs sets what GET /prs answers: l's open items for state=open, all
// of them for state=all (as the agent's forge shows them).
func (a *Agent) SetPRs(l api.PRList) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prs = &l
}

func (a *Agent) listPRs(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := api.PRList{Items: []api.PRView{}, AsOf: time.Now().UTC()}
	if a.prs != nil {
		out.Forge, out.Cluster, out.AsOf = a.prs.Forge, a.prs.Cluster, a.prs.AsOf
		for _, p := range a.prs.Items {
			if r.URL.Query().Get("state") == "all" || p.State == "open" {
				out.Items = append(out.Items, p)
			}
		}
	}
	api.WriteJSON(w, 200, out)
}

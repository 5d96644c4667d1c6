// Package api serves the dashboard REST API (/api/v1/...): agents with live
// health and effective config, alert decisions, investigations, findings,
// the merged A2A audit log, manual runs, and the OpenAPI file describing it.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/lifecycle"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// Store is what the dashboard reads.
type Store interface {
	ListDecisions(ctx context.Context, p store.Page) ([]store.AlertDecision, string, error)
	ListInvestigations(ctx context.Context, p store.Page) ([]store.Investigation, string, error)
	GetInvestigation(ctx context.Context, id string) (store.Investigation, error)
	CountDecisions(ctx context.Context, since time.Time) (map[string]int, error)
	ListFiring(ctx context.Context, p store.Page) ([]store.AlertDecision, string, int, error)
}

// Agents calls the agents (*dispatch.Client).
type Agents interface {
	Info(ctx context.Context, slug string) (json.RawMessage, error)
	A2ALog(ctx context.Context, slug string, limit int) ([]json.RawMessage, error)
	Run(ctx context.Context, slug string, req kapi.RunRequest, async bool) (kapi.RunResult, error)
}

// Registered is an agent the core knows.
type Registered struct {
	Slug           string
	Persona        string
	URL            string
	ReceivesAlerts bool
}

// Deps are the API's dependencies.
type Deps struct {
	Store  Store
	Agents Agents
	Fleet  []Registered
	// PRSources are the agents asked for the forge's pull requests (GET
	// /api/v1/prs): those that hold forge identities, of every cluster.
	PRSources []Registered
	// Resolve maps a slug or persona name to a registered slug.
	Resolve func(name string) (string, bool)
	// PeerTimeout bounds GET /info and /a2a/log calls (default 3s).
	PeerTimeout time.Duration
	// RunTimeout bounds a manual run forwarded synchronously.
	RunTimeout time.Duration
	Log        *zap.Logger
	// ActionsStore and ActionsAgents serve /api/v1/actions (the kill
	// switch, fanned out) and /api/v1/actions/proposals; nil: not mounted.
	ActionsStore  ActionsStore
	ActionsAgents ActionsAgents
	// Events serves GET /api/v1/events; nil: not mounted.
	Events EventSource
}

type server struct{ Deps }

// Routes mounts the dashboard API on r (paths under /api/v1).
func Routes(r chi.Router, d Deps) {
	if d.PeerTimeout <= 0 {
		d.PeerTimeout = 3 * time.Second
	}
	if d.RunTimeout <= 0 {
		d.RunTimeout = 600 * time.Second
	}
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	s := &server{d}
	none, paged := kapi.AllowQuery(), kapi.AllowQuery("limit", "cursor")
	r.With(none).Get("/api/v1/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
	r.With(none).Get("/api/v1/agents", s.agents)
	r.With(kapi.AllowQuery("async")).Post("/api/v1/agents/{slug}/run", s.run)
	r.With(kapi.AllowQuery("limit", "cursor", "state")).Get("/api/v1/alerts", s.decisions)
	r.With(kapi.AllowQuery("since")).Get("/api/v1/alerts/counts", s.decisionCounts)
	r.With(none).Get("/api/v1/investigations/{id}/chain", s.investigationChain)
	r.With(kapi.AllowQuery("limit", "cursor", "workflow_type", "status")).Get("/api/v1/agents/{slug}/runs", s.agentRuns)
	r.With(paged).Get("/api/v1/investigations", s.investigations)
	r.With(none).Get("/api/v1/investigations/{id}", s.investigation)
	r.With(none).Get("/api/v1/investigations/{id}/report", s.investigationReport)
	r.With(kapi.AllowQuery(append([]string{"limit", "cursor"}, findingFilters...)...)).Get("/api/v1/findings", s.findings)
	r.With(kapi.AllowQuery(lifecycle.QueryParams...)).Get("/api/v1/findings/lifecycle", s.findingLives)
	r.With(paged).Get("/api/v1/audit", s.audit)
	r.With(kapi.AllowQuery("state", "agent", "cluster", "limit", "cursor")).Get("/api/v1/prs", s.prs)
	if d.Events != nil {
		r.With(none).Get("/api/v1/events", s.events)
	}
	if d.ActionsStore != nil && d.ActionsAgents != nil {
		r.With(none).Get("/api/v1/actions", s.getActions)
		r.With(none).Put("/api/v1/actions", s.putActions)
		r.With(kapi.AllowQuery("limit")).Get("/api/v1/actions/proposals", s.proposals)
	}
}

// WriteJSON writes v with code (pkg/api's one JSON writer).
func WriteJSON(w http.ResponseWriter, code int, v any) { kapi.WriteJSON(w, code, v) }

// WriteError writes {"error": msg}.
func WriteError(w http.ResponseWriter, code int, format string, args ...any) {
	kapi.WriteError(w, code, fmt.Sprintf(format, args...))
}

func (s *server) storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrInvalid):
		WriteError(w, http.StatusBadRequest, "%v", err)
	case errors.Is(err, store.ErrNotFound):
		WriteError(w, http.StatusNotFound, "%v", err)
	default:
		s.Log.Error("store", zap.Error(err))
		WriteError(w, http.StatusServiceUnavailable, "store unavailable: %v", err)
	}
}

// page parses ?limit=&cursor=.
func page(r *http.Request) (store.Page, error) {
	p := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return p, fmt.Errorf("limit %q: want an integer from 1 to %d", v, store.MaxLimit)
		}
		p.Limit = n
	} else {
		p.Limit = store.DefaultLimit
	}
	return p, nil
}

// decisions lists the recorded decisions, newest first; with
// ?state=firing, each alert firing with its newest decision and the total.
func (s *server) decisions(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	switch st := r.URL.Query().Get("state"); st {
	case "":
	case "firing":
		s.firing(w, r, p)
		return
	default:
		WriteError(w, http.StatusBadRequest, "state %q: want firing (or no state: every decision)", st)
		return
	}
	ds, next, err := s.Store.ListDecisions(r.Context(), p)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := ListAnswer[DecisionView]{Items: make([]DecisionView, len(ds)), NextCursor: next}
	for i, d := range ds {
		out.Items[i] = decisionView(d)
	}
	WriteJSON(w, http.StatusOK, out)
}

// FiringAnswer is GET /api/v1/alerts?state=firing: a page of the alerts
// firing, each one's newest decision, and how many fire in all.
type FiringAnswer struct {
	ListAnswer[DecisionView]
	Total int `json:"total"`
}

func (s *server) firing(w http.ResponseWriter, r *http.Request, p store.Page) {
	ds, next, total, err := s.Store.ListFiring(r.Context(), p)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := FiringAnswer{ListAnswer: ListAnswer[DecisionView]{Items: make([]DecisionView, len(ds)), NextCursor: next}, Total: total}
	for i, d := range ds {
		out.Items[i] = decisionView(d)
	}
	WriteJSON(w, http.StatusOK, out)
}

func (s *server) investigations(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	is, next, err := s.Store.ListInvestigations(r.Context(), p)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := ListAnswer[kapi.Investigation]{Items: make([]kapi.Investigation, len(is)), NextCursor: next}
	for i, inv := range is {
		out.Items[i] = investigationView(inv)
	}
	WriteJSON(w, http.StatusOK, out)
}

func (s *server) investigation(w http.ResponseWriter, r *http.Request) {
	inv, err := s.Store.GetInvestigation(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.storeError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, investigationView(inv))
}

// agents fetches every agent's /info concurrently; an agent that does not
// answer within PeerTimeout is shown down.
func (s *server) agents(w http.ResponseWriter, r *http.Request) {
	out := make([]AgentView, len(s.Fleet))
	var wg sync.WaitGroup
	for i, a := range s.Fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = s.agent(r.Context(), a)
		}()
	}
	wg.Wait()
	WriteJSON(w, http.StatusOK, map[string]any{"agents": out})
}

func (s *server) agent(ctx context.Context, a Registered) AgentView {
	// Only redacted values leave the core: an agent's URL, its error and
	// its settings may hold userinfo or a key (docs/MANUAL.md, "Redaction").
	v := AgentView{Slug: a.Slug, Persona: a.Persona, URL: redact.URL(a.URL), ReceivesAlerts: a.ReceivesAlerts, Tools: []ToolView{}, Pulse: []PulseView{}}
	ctx, cancel := context.WithTimeoutCause(ctx, s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
	defer cancel()
	start := time.Now()
	raw, err := s.Agents.Info(ctx, a.Slug)
	v.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		v.Status, v.Error = "down", redact.Error(err)
		return v
	}
	var in info
	if err := json.Unmarshal(raw, &in); err != nil {
		v.Status, v.Error = "down", fmt.Sprintf("/info is not the agent info document: %v", err)
		return v
	}
	v.Status = "up"
	if in.Agent.Persona != "" {
		v.Persona = in.Agent.Persona
	}
	v.Model, v.Store, v.Version, v.Mode = in.Model, in.Store, in.Version, in.Mode
	v.Pulse = pulseOf(raw)
	if len(in.Settings) > 0 && string(in.Settings) != "null" {
		v.Settings, _ = redact.JSON(in.Settings)
	}
	if in.Tools != nil {
		v.Tools = in.Tools
	}
	if in.Agent.Slug != "" && in.Agent.Slug != a.Slug {
		v.Error = fmt.Sprintf("registered as %s but reports slug %s", a.Slug, in.Agent.Slug)
	}
	return v
}

// MaxRunBody caps the body of POST /api/v1/agents/{slug}/run (413 above).
const MaxRunBody = 256 << 10

// runBody is the body of POST /api/v1/agents/{slug}/run.
type runBody struct {
	Task         string          `json:"task"`
	Context      kapi.RunContext `json:"context,omitempty"`
	DiscussionID string          `json:"discussion_id,omitempty"`
}

func (s *server) run(w http.ResponseWriter, r *http.Request) {
	slug, ok := s.Resolve(chi.URLParam(r, "slug"))
	if !ok {
		WriteError(w, http.StatusNotFound, "unknown agent %q", chi.URLParam(r, "slug"))
		return
	}
	var body runBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRunBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			WriteError(w, http.StatusRequestEntityTooLarge, "run request larger than %d bytes", mbe.Limit)
			return
		}
		WriteError(w, http.StatusBadRequest, "bad run request: %v", err)
		return
	}
	if strings.TrimSpace(body.Task) == "" {
		WriteError(w, http.StatusBadRequest, "task is required")
		return
	}
	async := r.URL.Query().Get("async") == "1"
	ctx, cancel := context.WithTimeoutCause(r.Context(), s.RunTimeout, fmt.Errorf("AGENT_CALL_TIMEOUT (%s) elapsed", s.RunTimeout))
	defer cancel()
	res, err := s.Agents.Run(ctx, slug, kapi.RunRequest{
		Task: body.Task, WorkflowType: kapi.WorkflowManual, Context: body.Context, Caller: "core", DiscussionID: body.DiscussionID,
		// The core lends its token to the agent: the run is a person's only
		// when the caller held AUTH_TOKEN itself (docs/MANUAL.md, "Authentication").
		Unattended: !httpauth.Writer(r.Context()),
	}, async)
	if err != nil {
		var se *dispatch.StatusError
		switch {
		case errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != http.StatusUnauthorized && se.Code != http.StatusForbidden:
			WriteError(w, se.Code, "agent %s: %s", slug, se.Msg)
		case ctx.Err() != nil && r.Context().Err() == nil:
			WriteError(w, http.StatusGatewayTimeout, "agent %s: %v", slug, context.Cause(ctx))
		default:
			WriteError(w, http.StatusBadGateway, "agent %s: %v", slug, err)
		}
		return
	}
	code := http.StatusOK
	if async && res.Status == kapi.StatusRunning {
		code = http.StatusAccepted
	}
	if res.Findings == nil {
		res.Findings = []kapi.Finding{}
	}
	WriteJSON(w, code, res)
}

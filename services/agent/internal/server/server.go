// Package server is the agent's HTTP surface (docs/ARCHITECTURE.md): POST /run,
// GET /runs/{id}, /health, /ready, /info, /metrics. Other packages mount
// their routes (A2A, pulse) on the same router through Handle.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/lifecycle"
	"github.com/kubecrew/kubecrew/pkg/readiness"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 1 << 20

// Deps are the server's dependencies.
type Deps struct {
	Engine *engine.Engine
	Store  store.AgentStore
	Info   func() any // GET /info body
	// Checks are /ready's dependencies (docs/MANUAL.md "Readiness").
	Checks []readiness.Check
	// Auth guards every route but the open ones (OpenPaths).
	Auth     httpauth.Tokens
	Gatherer prometheus.Gatherer
	// PRs serves GET /prs; nil: no GitOps repository (an empty list).
	PRs PRReader
	Log *zap.Logger
	Now func() time.Time // nil: time.Now
}

// Server is the agent's HTTP handler.
type Server struct {
	d        Deps
	r        chi.Router
	draining atomic.Bool
	prCache  prCache
}

// New builds the router.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	if d.Gatherer == nil {
		d.Gatherer = prometheus.DefaultGatherer
	}
	s := &Server{d: d, r: chi.NewRouter()}
	s.r.Use(middleware.Recoverer)
	// One guard in front of the whole router, so a route another package
	// mounts later is protected without asking (docs/MANUAL.md, "Authentication").
	s.r.Use(Guard(d.Auth), api.RejectControlChars)
	s.r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	s.r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
	})
	s.r.Get("/health", s.health)
	s.r.Get("/ready", s.ready)
	s.r.Get("/info", s.info)
	s.r.Handle("/metrics", promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{}))
	s.r.With(api.AllowQuery("async")).Post("/run", s.run)
	s.r.With(api.AllowQuery("limit", "cursor", "workflow_type", "status")).Get("/runs", s.listRuns)
	s.r.Get("/runs/{id}", s.getRun)
	s.r.Get("/runs/{id}/trace", s.getTrace)
	s.r.Get("/runs/{id}/report", s.getReport)
	s.r.With(api.AllowQuery(lifecycle.QueryParams...)).Get("/findings/lifecycle", s.findingLives)
	s.r.With(api.AllowQuery("state", "limit")).Get("/prs", s.prs)
	s.actionRoutes()
	return s
}

func (s *Server) now() time.Time {
	if s.d.Now != nil {
		return s.d.Now()
	}
	return time.Now()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.r.ServeHTTP(w, r) }

// Router exposes the router so other packages can mount routes.
func (s *Server) Router() chi.Router { return s.r }

// Drain makes /ready answer 503 (shutdown in progress).
func (s *Server) Drain() { s.draining.Store(true) }

// OpenPaths answer without a token: probes, Prometheus, and the A2A agent
// card, which a client reads to learn that /invoke wants a bearer token
// (the card declares the scheme and holds no secret).
var OpenPaths = map[string]bool{
	"/health": true, "/ready": true, "/metrics": true,
	"/.well-known/agent-card.json": true, "/.well-known/agent.json": true,
}

// Guard is the agent's auth middleware: t on every path but OpenPaths.
func Guard(t httpauth.Tokens) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		guarded := t.Middleware("kubecrew-agent")(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if OpenPaths[r.URL.Path] {
				next.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		})
	}
}

// WriteJSON writes v with status code (api.WriteJSON).
func WriteJSON(w http.ResponseWriter, code int, v any) { api.WriteJSON(w, code, v) }

// WriteError writes {"error": msg}.
func WriteError(w http.ResponseWriter, code int, msg string) { api.WriteError(w, code, msg) }

// DecodeStrict reads a JSON body into v: bounded size, unknown fields and
// trailing data rejected. It writes the 4xx answer itself and returns false
// on failure.
func DecodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	// The body is JSON whatever the Content-Type says: `curl -d` sends
	// application/x-www-form-urlencoded, and refusing that would only get in
	// a person's way. Multipart bodies are certainly not JSON.
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "multipart/") {
		WriteError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q: send a JSON object", ct))
		return false
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", MaxBodyBytes))
		case errors.Is(err, io.EOF):
			WriteError(w, http.StatusBadRequest, "empty request body: send a JSON object")
		default:
			WriteError(w, http.StatusBadRequest, "malformed request: "+strings.TrimPrefix(err.Error(), "json: "))
		}
		return false
	}
	if dec.More() {
		WriteError(w, http.StatusBadRequest, "malformed request: trailing data after the JSON object")
		return false
	}
	return true
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	// within the manifests' 4s probe timeout; slow probes are cached
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	var extra []readiness.Failure
	draining := s.draining.Load()
	if draining {
		extra = append(extra, readiness.Failure{Dependency: "shutdown", Error: "draining: the agent is shutting down"})
	}
	code, body := readiness.Evaluate(ctx, s.d.Checks, extra...)
	if draining {
		body["shutdown"] = "draining"
	}
	// Without a token: which dependency fails, never its address.
	if s.d.Auth.Check(r) == httpauth.None {
		body = readiness.Public(body)
	}
	WriteJSON(w, code, body)
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, s.d.Info())
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if !DecodeStrict(w, r, &req) {
		return
	}
	// A run is a person's (interactive) only for a caller the write token
	// let in, never by what its body says (docs/MANUAL.md, "Authentication").
	if !httpauth.Writer(r.Context()) {
		req.Unattended = true
	}
	run, err := s.d.Engine.Start(r.Context(), req)
	var ve *engine.ValidationError
	var busy *api.BusyError
	switch {
	case errors.As(err, &ve):
		WriteError(w, http.StatusBadRequest, ve.Msg)
		return
	case errors.As(err, &busy):
		// At capacity: not a failure, the caller sends it again later.
		w.Header().Set("Retry-After", strconv.Itoa(api.RetryAfterSeconds(busy.RetryAfter)))
		WriteError(w, http.StatusTooManyRequests, busy.Error())
		return
	case errors.Is(err, engine.ErrShuttingDown):
		WriteError(w, http.StatusServiceUnavailable, "agent is shutting down")
		return
	case err != nil:
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if async, _ := strconv.ParseBool(r.URL.Query().Get("async")); async {
		w.Header().Set("Location", "/runs/"+run.ID)
		WriteJSON(w, http.StatusAccepted, map[string]string{"run_id": run.ID, "status": api.StatusRunning, "agent": s.d.Engine.Agent().Slug})
		return
	}
	res, err := run.Wait(r.Context())
	if err != nil {
		// The caller stopped waiting (hung up, or its own deadline passed):
		// nobody will read the answer, so the run ends and is recorded.
		run.CancelFor("the caller hung up before the run finished")
		s.d.Log.Info("client left before the run finished; it is canceled", zap.String("run_id", run.ID))
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

// ResultOf converts a stored run to its wire result.
func ResultOf(rec store.Run) api.RunResult {
	fs := rec.Findings
	if fs == nil {
		fs = []api.Finding{}
	}
	return api.RunResult{
		RunID: rec.ID, Agent: rec.Agent, WorkflowType: rec.WorkflowType, Status: rec.Status,
		Answer: rec.Answer, Verdict: rec.Verdict, Findings: fs, Iterations: rec.Iterations,
		Tokens: rec.Tokens, StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, Error: rec.Error,
		Delegation: rec.Delegation,
	}
}

// loadRun reads the run named in the URL and its trace, answering 404/500
// itself when it cannot.
func (s *Server) loadRun(w http.ResponseWriter, r *http.Request) (store.Run, []store.Event, bool) {
	id := chi.URLParam(r, "id")
	rec, err := s.d.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no run %q", id))
		return rec, nil, false
	}
	if errors.Is(err, store.ErrInvalid) {
		WriteError(w, http.StatusBadRequest, err.Error())
		return rec, nil, false
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading run: "+err.Error())
		return rec, nil, false
	}
	evs, err := s.d.Store.Events(r.Context(), id)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading trace: "+err.Error())
		return rec, nil, false
	}
	if evs == nil {
		evs = []store.Event{}
	}
	return rec, evs, true
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	rec, evs, ok := s.loadRun(w, r)
	if !ok {
		return
	}
	WriteJSON(w, http.StatusOK, api.RunView{RunResult: ResultOf(rec), Task: rec.Task, Context: rec.Context,
		Caller: rec.Caller, SocialDepth: rec.SocialDepth, DiscussionID: rec.DiscussionID, Trace: evs})
}

func (s *Server) getTrace(w http.ResponseWriter, r *http.Request) {
	_, evs, ok := s.loadRun(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, ev := range evs {
		_ = enc.Encode(ev)
	}
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	p, ok := ParsePage(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	runs, next, err := s.d.Store.ListRuns(r.Context(), store.RunFilter{
		WorkflowType: q.Get("workflow_type"), Status: q.Get("status"),
	}, p)
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	items := make([]api.RunResult, 0, len(runs))
	for _, rec := range runs {
		items = append(items, ResultOf(rec))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}

// ParsePage reads ?limit=&cursor=, answering 400 for a bad limit.
func ParsePage(w http.ResponseWriter, r *http.Request) (store.Page, bool) {
	q := r.URL.Query()
	p := store.Page{Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxLimit {
			WriteError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", store.MaxLimit))
			return p, false
		}
		p.Limit = n
	}
	return p, true
}

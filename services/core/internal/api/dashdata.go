package api

// What the dashboard (docs/MANUAL.md, "Dashboard") reads beyond the lists: the
// decision counts of a window, an investigation's chain as data, and an
// agent's runs. The dashboard reads only this public API.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// RunLister lists an agent's runs (*dispatch.Client).
type RunLister interface {
	Runs(ctx context.Context, slug string, query url.Values) (dispatch.RunPage, error)
}

// CountsAnswer is GET /api/v1/alerts/counts.
type CountsAnswer struct {
	Since  time.Time      `json:"since"`
	Counts map[string]int `json:"counts"`
	Total  int            `json:"total"`
}

// decisionCounts answers how many decisions of each kind were recorded
// since ?since= (RFC 3339; default an hour ago).
func (s *server) decisionCounts(w http.ResponseWriter, r *http.Request) {
	since := time.Now().Add(-time.Hour)
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "since %q: want an RFC 3339 time such as 2026-12-01T20:00:00Z", v)
			return
		}
		since = t
	}
	counts, err := s.Store.CountDecisions(r.Context(), since)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := CountsAnswer{Since: since.UTC(), Counts: counts}
	for _, n := range counts {
		out.Total += n
	}
	WriteJSON(w, http.StatusOK, out)
}

// ChainRun is one run of an investigation's chain with its trace.
type ChainRun struct {
	kapi.RunResult
	AgentName   string            `json:"agent_name"`
	Task        string            `json:"task"`
	Caller      string            `json:"caller,omitempty"`
	SocialDepth int               `json:"social_depth"`
	Trace       []kapi.TraceEvent `json:"trace"`
	FetchError  string            `json:"fetch_error,omitempty"`
}

// ChainAnswer is GET /api/v1/investigations/{id}/chain: the data of the
// report page (/report).
type ChainAnswer struct {
	Investigation kapi.Investigation `json:"investigation"`
	Outcome       *OutcomeView       `json:"outcome"`
	Runs          []ChainRun         `json:"runs"`
	Waiting       []kapi.ActionView  `json:"waiting"`
}

// OutcomeView is what came of a chain (tracereport.Conclude): a PR merged,
// one left open for a person and why, a refusal, a failure, or done.
type OutcomeView struct {
	State    string   `json:"state"`
	Headline string   `json:"headline"`
	Link     string   `json:"link,omitempty"`
	Openable bool     `json:"openable"`
	Lines    []string `json:"lines"`
}

func (s *server) investigationChain(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	inv, err := s.Store.GetInvestigation(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no investigation %q", id)
		return
	}
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := ChainAnswer{Investigation: investigationView(inv), Runs: []ChainRun{}, Waiting: []kapi.ActionView{}}
	reader, _ := s.Agents.(RunReader)
	if reader != nil && inv.RunID != "" {
		runs := s.followChain(r.Context(), reader, tracereport.Link{Agent: inv.Agent, RunID: inv.RunID})
		if o := tracereport.Conclude(runs); o != nil {
			out.Outcome = &OutcomeView{State: o.State, Headline: o.Headline, Link: o.Link, Openable: o.Openable, Lines: append([]string{}, o.Lines...)}
		}
		if w := s.waiting(r.Context(), runs); w != nil {
			out.Waiting = w
		}
		for _, run := range runs {
			cr := ChainRun{RunResult: run.RunResult, AgentName: run.AgentName, Task: run.Task, Caller: run.Caller,
				SocialDepth: run.SocialDepth, Trace: []kapi.TraceEvent{}, FetchError: run.FetchError}
			if cr.Findings == nil {
				cr.Findings = []kapi.Finding{}
			}
			cr.Trace = append(cr.Trace, run.Trace...)
			out.Runs = append(out.Runs, cr)
		}
	}
	WriteJSON(w, http.StatusOK, out)
}

// agentRuns is GET /api/v1/agents/{slug}/runs: the agent's GET /runs
// (newest first, ?workflow_type=&status=&limit=&cursor=).
func (s *server) agentRuns(w http.ResponseWriter, r *http.Request) {
	slug, ok := s.Resolve(chi.URLParam(r, "slug"))
	if !ok {
		WriteError(w, http.StatusNotFound, "unknown agent %q", chi.URLParam(r, "slug"))
		return
	}
	lister, _ := s.Agents.(RunLister)
	if lister == nil {
		WriteError(w, http.StatusNotImplemented, "this core cannot list agent runs")
		return
	}
	q := url.Values{}
	for _, k := range []string{"workflow_type", "status", "limit", "cursor"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	if _, err := page(r); err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
	defer cancel()
	p, err := lister.Runs(ctx, slug, q)
	if err != nil {
		var se *dispatch.StatusError
		if errors.As(err, &se) && se.Code == http.StatusBadRequest {
			WriteError(w, http.StatusBadRequest, "agent %s: %s", slug, se.Msg)
			return
		}
		WriteError(w, http.StatusBadGateway, "agent %s: %s", slug, redact.Error(err))
		return
	}
	if p.Items == nil {
		p.Items = []kapi.RunResult{}
	}
	for i := range p.Items {
		if p.Items[i].Findings == nil {
			p.Items[i].Findings = []kapi.Finding{}
		}
	}
	WriteJSON(w, http.StatusOK, ListAnswer[kapi.RunResult]{Items: p.Items, NextCursor: p.NextCursor})
}

// pulseOf reads the pulse schedule of an agent's /info.
func pulseOf(raw json.RawMessage) []PulseView {
	var in struct {
		Pulse []PulseView `json:"pulse"`
	}
	if json.Unmarshal(raw, &in) != nil || in.Pulse == nil {
		return []PulseView{}
	}
	return in.Pulse
}

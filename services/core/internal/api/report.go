package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
	"github.com/kubecrew/kubecrew/services/core/internal/chain"
)

// RunReader reads an agent's run with its trace (*dispatch.Client).
type RunReader = chain.RunReader

// investigationReport is GET /api/v1/investigations/{id}/report: the
// investigation and the chain of runs it caused across agents — the triage
// run, the run it delegated to, the runs that one told — on one
// self-contained HTML page. Runs are followed through the A2A sends and
// delegations recorded in each trace, breadth first, at most maxChainRuns.
func (s *server) investigationReport(w http.ResponseWriter, r *http.Request) {
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
	page := tracereport.Page{
		Title: fmt.Sprintf("Investigation %s — %s", inv.ID, inv.Alertname),
		Intro: []string{
			fmt.Sprintf("Alert %s (fingerprint %s) → %s, status %s, started %s", inv.Alertname, inv.Fingerprint, inv.Agent, inv.Status, inv.StartedAt.UTC().Format(time.RFC3339)),
		},
	}
	if inv.Error != "" {
		page.Intro = append(page.Intro, "Error: "+inv.Error)
	}
	reader, _ := s.Agents.(RunReader)
	if reader != nil && inv.RunID != "" {
		page.Runs = s.followChain(r.Context(), reader, tracereport.Link{Agent: inv.Agent, RunID: inv.RunID})
		page.Outcome = tracereport.Conclude(page.Runs)
		page.Waiting = s.waiting(r.Context(), page.Runs)
	}
	html, err := tracereport.Render(page)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rendering: %v", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	_, _ = w.Write(html)
}

func (s *server) followChain(ctx context.Context, reader RunReader, first tracereport.Link) []tracereport.Run {
	return chain.Follower{Reader: reader, Resolve: s.Resolve, Timeout: s.PeerTimeout}.Follow(ctx, first)
}

// waiting asks each agent of the chain for what its envelope left for a
// human and keeps what the chain's runs left: proposals and
// recommendations with the exact change. An agent that does not answer
// leaves nothing here (its runs' traces still record the decisions).
func (s *server) waiting(ctx context.Context, runs []tracereport.Run) []kapi.ActionView {
	if s.ActionsAgents == nil {
		return nil
	}
	ids := map[string]bool{}
	var agents []string
	for _, r := range runs {
		ids[r.RunID] = true
		if r.AgentName != "" && !slices.Contains(agents, r.AgentName) {
			agents = append(agents, r.AgentName)
		}
	}
	var out []kapi.ActionView
	seen := map[string]bool{}
	for _, a := range agents {
		cctx, cancel := context.WithTimeout(ctx, s.PeerTimeout)
		items, err := s.ActionsAgents.Proposals(cctx, a, store.MaxLimit)
		cancel()
		if err != nil {
			continue
		}
		for _, it := range items {
			if ids[it.RunID] && !seen[it.ID] {
				seen[it.ID] = true
				out = append(out, it)
			}
		}
	}
	return out
}

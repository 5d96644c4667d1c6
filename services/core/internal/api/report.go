package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

// RunReader reads an agent's run with its trace (*dispatch.Client).
type RunReader interface {
	GetRun(ctx context.Context, slug, runID string) (json.RawMessage, error)
}

// maxChainRuns bounds how many runs one investigation report follows.
const maxChainRuns = 12

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
	}
	html, err := tracereport.Render(page)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rendering: %v", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(html)
}

func (s *server) followChain(ctx context.Context, reader RunReader, first tracereport.Link) []tracereport.Run {
	queue := []tracereport.Link{first}
	seen := map[tracereport.Link]bool{first: true}
	var runs []tracereport.Run
	for len(queue) > 0 && len(runs) < maxChainRuns {
		l := queue[0]
		queue = queue[1:]
		name := l.Agent
		if info, ok := s.Resolve(l.Agent); ok {
			name = info
		}
		cctx, cancel := context.WithTimeout(ctx, s.PeerTimeout)
		raw, err := reader.GetRun(cctx, name, l.RunID)
		cancel()
		run := tracereport.Run{AgentName: name, RunResult: kapi.RunResult{RunID: l.RunID, Agent: name}}
		var ar kapi.RunView // an agent's GET /runs/{id}
		switch {
		case err != nil:
			run.FetchError = err.Error()
		case json.Unmarshal(raw, &ar) != nil:
			run.FetchError = "the agent's answer is not a run"
		default:
			run = tracereport.Run{RunResult: ar.RunResult, AgentName: name, Task: ar.Task, Caller: ar.Caller,
				SocialDepth: ar.SocialDepth, Trace: ar.Trace}
		}
		runs = append(runs, run)
		for _, next := range tracereport.Links(run) {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return runs
}

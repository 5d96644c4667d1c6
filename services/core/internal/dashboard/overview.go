package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

// How much the overview reads: investigations, and the chains of the
// newest finished ones (for the PRs and their review).
const (
	overviewInvestigations = 50
	overviewChains         = 6
	// overviewFiring bounds the alerts firing shown; the rest are a link.
	overviewFiring = 30
)

type agentRow struct {
	api.AgentView
	Busy      int
	LastPulse *kapi.RunResult
	RunsError string
}

type prRow struct {
	Investigation kapi.Investigation
	Outcome       api.OutcomeView
	Reviewer      string
	Verdict       string
}

type overviewData struct {
	WaitingPRs []prRow
	Recs       []kapi.ActionView
	Failed     []kapi.Investigation
	Agents     []agentRow
	Firing     []api.DecisionView
	MoreFiring int
	// FiringTotal is how many alerts fire in all (the API's total).
	FiringTotal int
	Running     []kapi.Investigation
	Recent      []kapi.Investigation
	PRs         []prRow
	Counts      api.CountsAnswer
	Kinds       []kindCount
}

type kindCount struct {
	Kind string
	N    int
}

// decisionKinds are the decisions in the order the overview counts them.
var decisionKinds = []string{"dispatched", "joined", "busy", "dropped", "deduped", "cooldown", "resolved", "ignored", "rejected"}

// gather runs the reads of a page concurrently and collects what failed.
type gather struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	partial []string
}

func (g *gather) do(what string, fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil {
			g.mu.Lock()
			g.partial = append(g.partial, what+": "+err.Error())
			g.mu.Unlock()
		}
	}()
}

func (g *gather) wait() []string {
	g.wg.Wait()
	slices.Sort(g.partial)
	return g.partial
}

func (s *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	if !wantsHTML(r.Header.Get("Accept")) && s.d.Index != nil {
		s.d.Index.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	var (
		d      overviewData
		g      gather
		firing api.FiringAnswer
		invs   api.ListAnswer[kapi.Investigation]
		agents struct {
			Agents []api.AgentView `json:"agents"`
		}
		props struct {
			Items []kapi.ActionView `json:"items"`
		}
	)
	g.do("alerts firing", func() error {
		return s.api.get(ctx, "/api/v1/alerts", url.Values{"state": {"firing"}, "limit": {strconv.Itoa(overviewFiring)}}, &firing)
	})
	g.do("decision counts", func() error {
		return s.api.get(ctx, "/api/v1/alerts/counts", url.Values{"since": {s.d.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}, &d.Counts)
	})
	g.do("agents", func() error {
		if err := s.api.get(ctx, "/api/v1/agents", nil, &agents); err != nil {
			return err
		}
		d.Agents = s.agentRows(ctx, agents.Agents)
		return nil
	})
	g.do("recommendations", func() error {
		return s.api.get(ctx, "/api/v1/actions/proposals", url.Values{"limit": {"50"}}, &props)
	})
	g.do("investigations", func() error {
		if err := s.api.get(ctx, "/api/v1/investigations", url.Values{"limit": {strconv.Itoa(overviewInvestigations)}}, &invs); err != nil {
			return err
		}
		d.PRs = s.prRows(ctx, invs.Items)
		return nil
	})
	partial := g.wait()
	d.Firing, d.FiringTotal = firing.Items, firing.Total
	d.MoreFiring = max(0, firing.Total-len(firing.Items))
	for _, inv := range invs.Items {
		switch inv.Status {
		case kapi.StatusRunning:
			d.Running = append(d.Running, inv)
		case kapi.StatusFailed, kapi.StatusPartial:
			d.Failed = append(d.Failed, inv)
		}
		if len(d.Recent) < 10 && inv.Status != kapi.StatusRunning {
			d.Recent = append(d.Recent, inv)
		}
	}
	for _, p := range props.Items {
		if p.Outcome == "recommended" || p.Outcome == "proposed" {
			d.Recs = append(d.Recs, p)
		}
	}
	for _, p := range d.PRs {
		if p.Outcome.State != "merged" {
			d.WaitingPRs = append(d.WaitingPRs, p)
		}
	}
	for _, k := range decisionKinds {
		d.Kinds = append(d.Kinds, kindCount{k, d.Counts.Counts[k]})
	}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d, Partial: partial})
}

// agentRows adds to each agent that is up whether it is running
// something and its last pulse run.
func (s *Dashboard) agentRows(ctx context.Context, as []api.AgentView) []agentRow {
	rows := make([]agentRow, len(as))
	var wg sync.WaitGroup
	for i, a := range as {
		rows[i].AgentView = a
		if a.Status != "up" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var running, pulse api.ListAnswer[kapi.RunResult]
			path := "/api/v1/agents/" + url.PathEscape(a.Slug) + "/runs"
			if err := s.api.get(ctx, path, url.Values{"status": {kapi.StatusRunning}, "limit": {"50"}}, &running); err != nil {
				rows[i].RunsError = err.Error()
				return
			}
			rows[i].Busy = len(running.Items)
			if err := s.api.get(ctx, path, url.Values{"workflow_type": {kapi.WorkflowPulseTask}, "limit": {"1"}}, &pulse); err != nil {
				rows[i].RunsError = err.Error()
				return
			}
			if len(pulse.Items) > 0 {
				rows[i].LastPulse = &pulse.Items[0]
			}
		}()
	}
	wg.Wait()
	return rows
}

// prRows reads the chains of the newest finished investigations and keeps
// those that opened a pull request, with its review.
func (s *Dashboard) prRows(ctx context.Context, invs []kapi.Investigation) []prRow {
	var picked []kapi.Investigation
	for _, inv := range invs {
		if inv.Status != kapi.StatusRunning && inv.RunID != "" && len(picked) < overviewChains {
			picked = append(picked, inv)
		}
	}
	chains := make([]*api.ChainAnswer, len(picked))
	var wg sync.WaitGroup
	for i, inv := range picked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c api.ChainAnswer
			if s.api.get(ctx, "/api/v1/investigations/"+url.PathEscape(inv.ID)+"/chain", nil, &c) == nil {
				chains[i] = &c
			}
		}()
	}
	wg.Wait()
	var out []prRow
	for _, c := range chains {
		if c == nil || c.Outcome == nil || c.Outcome.Link == "" {
			continue
		}
		row := prRow{Investigation: c.Investigation, Outcome: *c.Outcome}
		row.Reviewer, row.Verdict = review(c.Runs)
		out = append(out, row)
	}
	return out
}

// review is the verdict of the chain's last run that reviewed a PR.
func review(runs []api.ChainRun) (who, verdict string) {
	for _, r := range runs {
		for _, ev := range r.Trace {
			if ev.Type == "tool_result" && toolName(ev) == "review_pr" {
				who, verdict = r.AgentName, r.Verdict
			}
		}
	}
	return who, verdict
}

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
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

// How much the overview reads and shows.
const (
	overviewInvestigations = 50
	// overviewFiring bounds the alerts firing shown; the rest are a link.
	overviewFiring = 30
	// overviewPRs is how many pull requests the overview reads (every open
	// one and the newest merged or closed) and overviewPRRows how many of
	// them its table shows.
	overviewPRs    = 100
	overviewPRRows = 20
)

type agentRow struct {
	api.AgentView
	Busy      int
	LastPulse *kapi.RunResult
	RunsError string
}

type overviewData struct {
	// WaitingPRs are open PRs Vera reviewed and did not merge: they wait
	// for a person.
	WaitingPRs []kapi.PRView
	Recs       []kapi.ActionView
	Failed     []kapi.Investigation
	Agents     []agentRow
	Firing     []api.DecisionView
	MoreFiring int
	// FiringTotal is how many alerts fire in all (the API's total).
	FiringTotal int
	Running     []kapi.Investigation
	Recent      []kapi.Investigation
	// PRs are the newest agent PRs as the forge shows them, of PRTotal
	// read; PRSources says how each agent asked answered.
	PRs       []kapi.PRView
	PRTotal   int
	PRSources []api.PRSource
	Counts    api.CountsAnswer
	Kinds     []kindCount
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
			g.partial = append(g.partial, what+": "+redact.Error(err))
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
		prs    api.PRAnswer
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
		return s.api.get(ctx, "/api/v1/investigations", url.Values{"limit": {strconv.Itoa(overviewInvestigations)}}, &invs)
	})
	g.do("pull requests", func() error {
		return s.api.get(ctx, "/api/v1/prs", url.Values{"state": {"all"}, "limit": {strconv.Itoa(overviewPRs)}}, &prs)
	})
	partial := g.wait()
	d.PRTotal, d.PRSources = prs.Total, prs.Sources
	for _, src := range prs.Sources {
		if src.Status == "down" || src.Status == "unsupported" {
			partial = append(partial, "pull requests: "+src.Agent+" could not be asked ("+src.Status+"): "+src.Error)
		}
	}
	for _, p := range prs.Items {
		if p.State == "open" && p.Review != nil {
			d.WaitingPRs = append(d.WaitingPRs, p)
		}
	}
	d.PRs = prs.Items[:min(len(prs.Items), overviewPRRows)]
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
				rows[i].RunsError = redact.Error(err)
				return
			}
			rows[i].Busy = len(running.Items)
			if err := s.api.get(ctx, path, url.Values{"workflow_type": {kapi.WorkflowPulseTask}, "limit": {"1"}}, &pulse); err != nil {
				rows[i].RunsError = redact.Error(err)
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

package dashboard

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

// PR tools whose results the investigation page shows as the pull request
// (pkg/gitops's names).
const (
	toolBump   = "bump_workload_memory"
	toolGetPR  = "get_pr"
	toolReview = "review_pr"
	toolMerge  = "merge_if_trivial"
)

type toolCall struct {
	ID, Name, Outcome, Output string
	Args                      string
	At                        time.Time
	DurationMS                int64
	By                        string
}

type a2aSend struct {
	Verb, To, CalleeRunID, Outcome string
	At                             time.Time
}

type runRow struct {
	api.ChainRun
	Calls []toolCall
	Sends []a2aSend
}

type severityGroup struct {
	Severity string
	Findings []findingRow
}

type findingRow struct {
	kapi.Finding
	By string
}

type prInfo struct {
	Opened, Diff, Review, Merge string
	Reviewer, Verdict           string
}

type investigationData struct {
	Chain    api.ChainAnswer
	Runs     []runRow
	Findings []severityGroup
	PR       *prInfo
	Report   string
}

var severityOrder = []string{"critical", "high", "medium", "low", "info"}

func (s *Dashboard) investigation(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var c api.ChainAnswer
	if err := s.api.get(r.Context(), "/api/v1/investigations/"+url.PathEscape(id)+"/chain", nil, &c); err != nil {
		s.fail(w, r, err)
		return
	}
	d := investigationData{Chain: c, Report: "/api/v1/investigations/" + url.PathEscape(id) + "/report"}
	var all []findingRow
	for _, f := range c.Investigation.Findings {
		all = append(all, findingRow{f, c.Investigation.Agent})
	}
	for _, run := range c.Runs {
		row := runRow{ChainRun: run}
		row.Calls, row.Sends = calls(run.Trace)
		d.Runs = append(d.Runs, row)
		for _, f := range run.Findings {
			all = append(all, findingRow{f, run.AgentName})
		}
		d.PR = prOf(d.PR, run, row.Calls)
	}
	d.Findings = bySeverity(all)
	s.render(w, r, http.StatusOK, "investigation", page{Title: "Investigation " + c.Investigation.ID, Nav: "investigations", Data: d})
}

// calls pairs each tool_call with its tool_result, in trace order, and
// lists the A2A sends.
func calls(trace []kapi.TraceEvent) ([]toolCall, []a2aSend) {
	var out []toolCall
	byID := map[string]int{}
	var sends []a2aSend
	for _, ev := range trace {
		var m struct {
			ID, Name, Outcome, Output, By, Verb, To string
			CalleeRunID                             string          `json:"callee_run_id"`
			DurationMS                              int64           `json:"duration_ms"`
			Args                                    json.RawMessage `json:"args"`
		}
		if json.Unmarshal(ev.Data, &m) != nil {
			continue
		}
		switch ev.Type {
		case "tool_call":
			byID[m.ID] = len(out)
			out = append(out, toolCall{ID: m.ID, Name: m.Name, Args: string(m.Args), At: ev.Time, By: m.By})
		case "tool_result":
			i, ok := byID[m.ID]
			if !ok || m.ID == "" {
				i = len(out)
				out = append(out, toolCall{ID: m.ID, Name: m.Name, At: ev.Time, By: m.By})
			}
			out[i].Outcome, out[i].Output, out[i].DurationMS = m.Outcome, m.Output, m.DurationMS
		case "a2a_send":
			sends = append(sends, a2aSend{Verb: m.Verb, To: m.To, CalleeRunID: m.CalleeRunID, Outcome: m.Outcome, At: ev.Time})
		}
	}
	return out, sends
}

// prOf adds what run did to the chain's pull request: opened it, read its
// diff, reviewed it, merged it or left it.
func prOf(pr *prInfo, run api.ChainRun, cs []toolCall) *prInfo {
	for _, c := range cs {
		if c.Outcome != "ok" {
			continue
		}
		if pr == nil && (c.Name == toolBump || c.Name == toolGetPR || c.Name == toolReview || c.Name == toolMerge) {
			pr = &prInfo{}
		}
		switch c.Name {
		case toolBump:
			pr.Opened = c.Output
		case toolGetPR:
			if _, diff, ok := strings.Cut(c.Output, "\ndiff ("); ok {
				if _, body, ok := strings.Cut(diff, "\n"); ok {
					pr.Diff = body
				}
			}
		case toolReview:
			pr.Review, pr.Reviewer, pr.Verdict = c.Output, run.AgentName, run.Verdict
		case toolMerge:
			pr.Merge = c.Output
			if pr.Reviewer == "" {
				pr.Reviewer, pr.Verdict = run.AgentName, run.Verdict
			}
		}
	}
	return pr
}

// bySeverity groups findings, most severe first, one row a finding key.
func bySeverity(fs []findingRow) []severityGroup {
	seen := map[string]bool{}
	groups := map[string][]findingRow{}
	for _, f := range fs {
		k := f.Key
		if k == "" {
			k = f.DeriveKey()
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		sev := strings.ToLower(f.Severity)
		if !slices.Contains(severityOrder, sev) {
			sev = "info"
		}
		groups[sev] = append(groups[sev], f)
	}
	var out []severityGroup
	for _, sev := range severityOrder {
		if g := groups[sev]; len(g) > 0 {
			slices.SortFunc(g, func(a, b findingRow) int {
				return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Reason, b.Reason))
			})
			out = append(out, severityGroup{sev, g})
		}
	}
	return out
}

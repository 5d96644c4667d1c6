// Package lifecycle is the findings' lives as people see them (docs/MANUAL.md,
// "Findings have a life"): the list query both services' APIs take, the
// view they answer with, and the morning digest built from the store.
// The lives themselves are kept by pkg/store (Lifecycle).
package lifecycle

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// QueryParams are the parameters the lifecycle lists take.
var QueryParams = []string{"state", "cluster", "namespace", "kind", "reason", "agent", "severity", "since", "limit", "cursor"}

// Query is a parsed lifecycle list request.
type Query struct {
	Filter store.LifecycleFilter
	Page   store.Page
}

// ParseQuery reads q: state (open — the default —, resolved or all),
// cluster, namespace, kind, reason, agent, severity (a comma list), since
// (RFC 3339 or a duration like 24h: first seen, or for state=resolved
// resolved, at or after it), limit and cursor. A bad value is an error
// naming the parameter (a 400).
func ParseQuery(q url.Values, now time.Time) (Query, error) {
	var out Query
	f := &out.Filter
	switch st := q.Get("state"); st {
	case "", store.FindingOpen:
		f.State = store.FindingOpen
	case store.FindingResolved:
		f.State = st
	case "all":
	default:
		return out, fmt.Errorf("state %q: want open, resolved or all", st)
	}
	f.Cluster, f.Namespace, f.Kind, f.Reason, f.Agent = q.Get("cluster"), q.Get("namespace"), q.Get("kind"), q.Get("reason"), q.Get("agent")
	for _, v := range q["severity"] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if !api.ValidSeverity(s) {
				return out, fmt.Errorf("severity %q: want critical, high, medium or low (a comma list for several)", s)
			}
			f.Severities = append(f.Severities, s)
		}
	}
	if v := q.Get("since"); v != "" {
		t, err := parseSince(v, now)
		if err != nil {
			return out, err
		}
		if f.State == store.FindingResolved {
			f.ResolvedSince = t
		} else {
			f.FirstSeenSince = t
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return out, fmt.Errorf("limit %q: want an integer from 1 to %d", v, store.MaxLimit)
		}
		out.Page.Limit = n
	}
	out.Page.Cursor = q.Get("cursor")
	return out, nil
}

func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since %q: want an RFC 3339 time (2026-12-01T08:00:00Z) or a duration (24h)", v)
}

// View is a state as the APIs show it.
func View(s store.FindingState) api.FindingStateView {
	return api.FindingStateView{Cluster: s.Cluster, Key: s.Key, State: s.State, Finding: s.Finding, Agent: s.Agent,
		RunID: s.RunID, Reopened: s.Reopened, FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, ResolvedAt: s.ResolvedAt}
}

package api

// GET /api/v1/prs: the agent pull requests as the forge shows them now,
// asked of the agents that hold forge identities (docs/MANUAL.md, "Dashboard").
// The forge is the truth: a PR a pulse opened is listed like one a
// delegation opened, and one a person merged on the forge is merged.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// PRAgents reads an agent's PRs (*dispatch.Client).
type PRAgents interface {
	PRs(ctx context.Context, slug, state string, recent int) (kapi.PRList, error)
}

// prRecent is how many merged or closed PRs each agent is asked for.
const prRecent = 50

// PRAnswer is GET /api/v1/prs.
type PRAnswer struct {
	Items      []kapi.PRView `json:"items"`
	NextCursor string        `json:"next_cursor"`
	// Total is how many PRs match, on every page.
	Total int `json:"total"`
	// Sources says how each agent asked answered: an agent down is named
	// here, never taken for an empty list.
	Sources []PRSource `json:"sources"`
}

// PRSource is how one agent answered GET /prs.
type PRSource struct {
	Agent   string     `json:"agent"`
	Status  string     `json:"status"` // ok|no_forge|unsupported|down
	Error   string     `json:"error,omitempty"`
	Forge   string     `json:"forge,omitempty"`
	AsOf    *time.Time `json:"as_of,omitempty"`
	Entries int        `json:"entries"`
}

type prFilter struct{ state, agent, cluster string }

func parsePRFilter(s *server, r *http.Request) (prFilter, error) {
	q := r.URL.Query()
	f := prFilter{state: q.Get("state"), agent: q.Get("agent"), cluster: q.Get("cluster")}
	switch f.state {
	case "":
		f.state = "open"
	case "open", "all":
	default:
		return f, fmt.Errorf("state %q: want open or all", f.state)
	}
	if f.agent != "" {
		slug, ok := s.Resolve(f.agent)
		if !ok {
			return f, fmt.Errorf("agent %q: not an agent of the fleet", f.agent)
		}
		f.agent = slug
	}
	return f, nil
}

// prs merges the PR lists of s.PRSources: one item per PR (agents reading
// one forge answer the same PRs; the most recently updated copy is kept),
// most recently updated first.
func (s *server) prs(w http.ResponseWriter, r *http.Request) {
	p, after, err := mergedPage(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	f, err := parsePRFilter(s, r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	reader, ok := s.Agents.(PRAgents)
	if !ok {
		WriteError(w, http.StatusServiceUnavailable, "the agents' pull requests cannot be read")
		return
	}
	out := PRAnswer{Items: []kapi.PRView{}, Sources: make([]PRSource, len(s.PRSources))}
	lists := make([]kapi.PRList, len(s.PRSources))
	var wg sync.WaitGroup
	for i, a := range s.PRSources {
		wg.Go(func() {
			ctx, cancel := context.WithTimeoutCause(r.Context(), s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
			defer cancel()
			// Always every state: of two agents' copies of a PR the fresher
			// wins, so a PR one agent still has open and the other has seen
			// merged is merged (the filter applies after).
			l, err := reader.PRs(ctx, a.Slug, "all", prRecent)
			src := PRSource{Agent: a.Slug, Status: "ok", Forge: l.Forge, Entries: len(l.Items)}
			switch {
			case errors.Is(err, dispatch.ErrNotSupported):
				src.Status, src.Error = "unsupported", "agent has no GET /prs (404)"
			case err != nil:
				src.Status, src.Error = "down", redact.Error(err)
			case l.Forge == "":
				src.Status = "no_forge"
			}
			if !l.AsOf.IsZero() {
				at := l.AsOf.UTC()
				src.AsOf = &at
			}
			out.Sources[i], lists[i] = src, l
		})
	}
	wg.Wait()
	key := func(v kapi.PRView) auditKey { return auditKey{at: v.UpdatedAt.UnixNano(), agent: v.Cluster, id: v.URL} }
	var all []kapi.PRView
	for _, v := range mergePRs(lists) {
		if f.match(v) {
			all = append(all, v)
		}
	}
	slices.SortFunc(all, func(a, b kapi.PRView) int { return key(a).compare(key(b)) })
	out.Total = len(all)
	for _, v := range all {
		if after != nil && key(v).compare(*after) <= 0 {
			continue
		}
		if len(out.Items) == p.Limit {
			out.NextCursor = key(out.Items[len(out.Items)-1]).encode()
			break
		}
		out.Items = append(out.Items, v)
	}
	WriteJSON(w, http.StatusOK, out)
}

func (f prFilter) match(v kapi.PRView) bool {
	return (f.agent == "" || strings.EqualFold(v.Author, f.agent)) && (f.cluster == "" || v.Cluster == f.cluster) &&
		(f.state == "all" || v.State == "open")
}

// mergePRs is one item per PR URL (or cluster and number, where a forge
// gives no URL): of two copies, the one updated later, then the one with
// more reviews read.
func mergePRs(lists []kapi.PRList) []kapi.PRView {
	byID := map[string]int{}
	var out []kapi.PRView
	for _, l := range lists {
		for _, v := range l.Items {
			if v.Cluster == "" {
				v.Cluster = l.Cluster
			}
			id := v.URL
			if id == "" {
				id = fmt.Sprintf("%s#%d", v.Cluster, v.Number)
			}
			i, seen := byID[id]
			if !seen {
				byID[id] = len(out)
				out = append(out, v)
				continue
			}
			if c := cmp.Or(v.UpdatedAt.Compare(out[i].UpdatedAt), cmp.Compare(v.Reviews, out[i].Reviews)); c > 0 {
				out[i] = v
			}
		}
	}
	return out
}

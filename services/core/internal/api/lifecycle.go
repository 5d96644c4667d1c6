package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/lifecycle"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// LifecycleAgents reads an agent's findings' lives (*dispatch.Client).
type LifecycleAgents interface {
	FindingLives(ctx context.Context, slug string, query url.Values) ([]kapi.FindingStateView, error)
}

// LivesAnswer is GET /api/v1/findings/lifecycle: the findings' lives the
// fleet's sweeps observed, merged, and how each agent answered.
type LivesAnswer struct {
	Items   []kapi.FindingStateView `json:"items"`
	Sources []AuditSource           `json:"sources"`
}

// findingLives asks every agent for the lives matching the query (open
// ones by default), merges them — one item per cluster and key, the most
// recently seen — newest first by first sighting, at most limit. Agents
// sharing one database answer the same lives; that is one item each.
func (s *server) findingLives(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("cursor") {
		WriteError(w, http.StatusBadRequest, "cursor: this list merges every agent's and has no pages; narrow it with the filters or since")
		return
	}
	parsed, err := lifecycle.ParseQuery(q, time.Now())
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit := parsed.Page.Limit
	if limit == 0 {
		limit = store.DefaultLimit
	}
	reader, ok := s.Agents.(LifecycleAgents)
	if !ok {
		WriteError(w, http.StatusServiceUnavailable, "the agents' findings cannot be read")
		return
	}
	q.Set("limit", strconv.Itoa(limit))
	type answer struct {
		items []kapi.FindingStateView
		src   AuditSource
	}
	answers := make([]answer, len(s.Fleet))
	var wg sync.WaitGroup
	for i, ag := range s.Fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.Context(), s.PeerTimeout)
			defer cancel()
			items, err := reader.FindingLives(ctx, ag.Slug, q)
			src := AuditSource{Agent: ag.Slug, Status: "ok", Entries: len(items)}
			switch {
			case errors.Is(err, dispatch.ErrNotSupported):
				src.Status = "unsupported"
			case err != nil:
				src.Status, src.Error = "down", redact.Error(err)
			}
			answers[i] = answer{items, src}
		}()
	}
	wg.Wait()
	out := LivesAnswer{Items: []kapi.FindingStateView{}, Sources: []AuditSource{}}
	byID := map[string]int{}
	for _, a := range answers {
		out.Sources = append(out.Sources, a.src)
		for _, it := range a.items {
			id := it.Cluster + "/" + it.Key
			if j, ok := byID[id]; ok {
				if it.LastSeen.After(out.Items[j].LastSeen) {
					out.Items[j] = it
				}
				continue
			}
			byID[id] = len(out.Items)
			out.Items = append(out.Items, it)
		}
	}
	slices.SortFunc(out.Items, func(a, b kapi.FindingStateView) int {
		return cmp.Or(b.FirstSeen.Compare(a.FirstSeen), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Key, b.Key))
	})
	if len(out.Items) > limit {
		out.Items = out.Items[:limit]
	}
	WriteJSON(w, http.StatusOK, out)
}

package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// PRReader reads the agent PRs on the agent's forge: the open ones with
// their newest review and, when recent > 0, that many of those merged or
// closed lately (gitops.Service.PRStatus, wired by app).
type PRReader func(ctx context.Context, recent int) (api.PRList, error)

// prCacheTTL is how long GET /prs answers from its last read of the
// forge: the dashboard refreshes on every event, the forge's API has a
// rate limit (docs/MANUAL.md, "Dashboard").
const prCacheTTL = 15 * time.Second

// prReadTimeout bounds one read of the forge. The read outlives the
// request that started it: a caller that stopped waiting still leaves the
// answer for the next one.
const prReadTimeout = 30 * time.Second

// Closed PRs GET /prs?state=all lists by default and at most.
const (
	prRecentDefault = 20
	prRecentMax     = 100
)

// prCache remembers the last answer of each state; one read of the forge
// per state at a time, which the requests that come meanwhile wait for
// (each only as long as its own caller waits).
type prCache struct {
	mu      sync.Mutex
	last    map[int]api.PRList    // by recent
	reading map[int]chan struct{} // closed when the read ends
}

// get answers from the cache while it is fresh, else reads the forge (or
// waits for the read under way).
func (c *prCache) get(ctx context.Context, recent int, now func() time.Time, read PRReader) (api.PRList, error) {
	for {
		c.mu.Lock()
		if l, ok := c.last[recent]; ok && now().Sub(l.AsOf) < prCacheTTL {
			c.mu.Unlock()
			return l, nil
		}
		if ch, ok := c.reading[recent]; ok {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return api.PRList{}, context.Cause(ctx)
			}
		}
		if c.reading == nil {
			c.reading, c.last = map[int]chan struct{}{}, map[int]api.PRList{}
		}
		ch := make(chan struct{})
		c.reading[recent] = ch
		c.mu.Unlock()
		// The read outlives the request that started it (prReadTimeout).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prReadTimeout)
		l, err := read(rctx, recent)
		cancel()
		c.mu.Lock()
		delete(c.reading, recent)
		if err == nil {
			if l.Items == nil {
				l.Items = []api.PRView{}
			}
			l.AsOf = now().UTC()
			c.last[recent] = l
		}
		close(ch)
		c.mu.Unlock()
		return l, err
	}
}

// prs is GET /prs: the agent PRs on this agent's forge (docs/MANUAL.md,
// "Dashboard"). ?state=open (default) or all (with ?limit= of the merged
// or closed ones, default 20, at most 100). An agent with no GitOps
// repository answers an empty list whose forge is "".
func (s *Server) prs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recent := 0
	switch st := q.Get("state"); st {
	case "", "open":
		if q.Has("limit") {
			WriteError(w, http.StatusBadRequest, "limit: only with state=all (every open PR is listed)")
			return
		}
	case "all":
		recent = prRecentDefault
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > prRecentMax {
				WriteError(w, http.StatusBadRequest, "limit "+strconv.Quote(v)+": want a whole number from 1 to "+strconv.Itoa(prRecentMax))
				return
			}
			recent = n
		}
	default:
		WriteError(w, http.StatusBadRequest, "state "+strconv.Quote(st)+": want open or all")
		return
	}
	if s.d.PRs == nil {
		WriteJSON(w, http.StatusOK, api.PRList{Items: []api.PRView{}, AsOf: s.now().UTC()})
		return
	}
	l, err := s.prCache.get(r.Context(), recent, s.now, s.d.PRs)
	if err != nil {
		WriteError(w, http.StatusBadGateway, "reading the forge: "+err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, l)
}

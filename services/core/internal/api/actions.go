package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/killswitch"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// ActionsStore keeps the core's copy of the kill switch.
type ActionsStore interface {
	ActionsState(ctx context.Context) (store.ActionsState, error)
	SetActionsState(ctx context.Context, s store.ActionsState) error
}

// ActionsAgents reaches the agents' action envelopes (*dispatch.Client).
type ActionsAgents interface {
	SetActions(ctx context.Context, slug string, s kapi.ActionsSwitch) (kapi.ActionsSwitch, error)
	GetActions(ctx context.Context, slug string) (kapi.ActionsSwitch, error)
	Proposals(ctx context.Context, slug string, limit int) ([]kapi.ActionView, error)
}

// AgentSwitch is one agent's kill switch as the core reached it.
type AgentSwitch struct {
	Slug   string              `json:"slug"`
	State  *kapi.ActionsSwitch `json:"state,omitempty"`
	Error  string              `json:"error,omitempty"`
	InSync bool                `json:"in_sync"`
}

// ActionsAnswer is GET and PUT /api/v1/actions: the core's switch and
// every agent's.
type ActionsAnswer struct {
	kapi.ActionsSwitch
	Agents []AgentSwitch `json:"agents"`
}

// getActions answers the core's kill switch and each agent's.
func (s *server) getActions(w http.ResponseWriter, r *http.Request) {
	st, err := s.ActionsStore.ActionsState(r.Context())
	if err != nil {
		s.storeError(w, err)
		return
	}
	view := killswitch.View(st)
	WriteJSON(w, http.StatusOK, ActionsAnswer{ActionsSwitch: view, Agents: s.fanOut(r.Context(), view, false)})
}

// putActions sets the kill switch on the core and fans it out to every
// agent (PUT /actions on each). 200 when every agent holds it; 502 with
// each agent's answer otherwise (the core's switch is set either way, and
// an agent that shares the core's database reads it from there).
func (s *server) putActions(w http.ResponseWriter, r *http.Request) {
	var in kapi.ActionsSwitch
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		WriteError(w, http.StatusBadRequest, "body: %s", strings.TrimPrefix(err.Error(), "json: "))
		return
	}
	st, err := killswitch.Parse(in, "core API")
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := s.ActionsStore.SetActionsState(r.Context(), st); err != nil {
		s.storeError(w, err)
		return
	}
	st, err = s.ActionsStore.ActionsState(r.Context())
	if err != nil {
		s.storeError(w, err)
		return
	}
	view := killswitch.View(st)
	agents := s.fanOut(r.Context(), view, true)
	s.Log.Info("kill switch set", zap.Bool("paused", st.Paused), zap.String("by", st.By), zap.String("reason", st.Reason))
	code := http.StatusOK
	for _, a := range agents {
		if !a.InSync {
			code = http.StatusBadGateway
		}
	}
	WriteJSON(w, code, ActionsAnswer{ActionsSwitch: view, Agents: agents})
}

// fanOut sends (set) or reads each agent's switch, concurrently, each call
// bounded by PeerTimeout.
func (s *server) fanOut(ctx context.Context, want kapi.ActionsSwitch, set bool) []AgentSwitch {
	out := make([]AgentSwitch, len(s.Fleet))
	var wg sync.WaitGroup
	for i, a := range s.Fleet {
		wg.Go(func() {
			cctx, cancel := context.WithTimeoutCause(ctx, s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
			defer cancel()
			var got kapi.ActionsSwitch
			var err error
			if set {
				// The agent stamps its own time; who and why are the core's.
				got, err = s.ActionsAgents.SetActions(cctx, a.Slug, kapi.ActionsSwitch{Paused: want.Paused, Reason: want.Reason, By: want.By})
			} else {
				got, err = s.ActionsAgents.GetActions(cctx, a.Slug)
			}
			out[i] = AgentSwitch{Slug: a.Slug}
			if err != nil {
				out[i].Error = redact.Error(err)
				return
			}
			out[i].State = &got
			out[i].InSync = *got.Paused == *want.Paused && (!*want.Paused || (got.Reason == want.Reason && got.By == want.By))
		})
	}
	wg.Wait()
	return out
}

// proposals merges what every agent's envelope left for a human
// (proposals in shadow mode, recommendations over a budget), newest first.
func (s *server) proposals(w http.ResponseWriter, r *http.Request) {
	limit := store.DefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			WriteError(w, http.StatusBadRequest, "limit %q: want an integer from 1 to %d", v, store.MaxLimit)
			return
		}
		limit = n
	}
	type part struct {
		items []kapi.ActionView
		err   error
	}
	parts := make([]part, len(s.Fleet))
	var wg sync.WaitGroup
	for i, a := range s.Fleet {
		wg.Go(func() {
			cctx, cancel := context.WithTimeoutCause(r.Context(), s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
			defer cancel()
			parts[i].items, parts[i].err = s.ActionsAgents.Proposals(cctx, a.Slug, limit)
		})
	}
	wg.Wait()
	items := []kapi.ActionView{}
	unreachable := map[string]string{}
	seen := map[string]bool{}
	for i, p := range parts {
		if p.err != nil {
			unreachable[s.Fleet[i].Slug] = redact.Error(p.err)
			continue
		}
		for _, it := range p.items {
			if !seen[it.ID] { // agents sharing one database answer the same rows
				seen[it.ID] = true
				items = append(items, it)
			}
		}
	}
	slices.SortFunc(items, func(a, b kapi.ActionView) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if len(items) > limit {
		items = items[:limit]
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "unreachable": unreachable})
}

// ReassertActions sends the core's kill switch to every agent that holds
// another one (an agent restarted on a memory store forgot it) and returns
// the agents it corrected. A switch never set is not sent.
func ReassertActions(ctx context.Context, d Deps) ([]string, error) {
	if d.ActionsStore == nil || d.ActionsAgents == nil {
		return nil, nil
	}
	if d.PeerTimeout <= 0 {
		d.PeerTimeout = 3 * time.Second
	}
	st, err := d.ActionsStore.ActionsState(ctx)
	if err != nil || st.At.IsZero() {
		return nil, err
	}
	s := &server{d}
	want := killswitch.View(st)
	var fixed []string
	for _, a := range s.fanOut(ctx, want, false) {
		if a.InSync || a.Error != "" { // an agent that does not answer is told on a later upkeep
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, d.PeerTimeout)
		_, err := d.ActionsAgents.SetActions(cctx, a.Slug, kapi.ActionsSwitch{Paused: want.Paused, Reason: want.Reason, By: want.By})
		cancel()
		if err == nil {
			fixed = append(fixed, a.Slug)
		}
	}
	return fixed, nil
}

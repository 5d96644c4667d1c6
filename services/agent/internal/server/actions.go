package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/killswitch"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// actionRoutes mounts the action envelope's routes (docs/MANUAL.md, "The action
// envelope"): the kill switch (GET, and PUT, which needs AUTH_TOKEN) and the
// decisions this agent's envelope recorded.
func (s *Server) actionRoutes() {
	s.r.With(api.AllowQuery()).Get("/actions", s.getActions)
	s.r.With(api.AllowQuery()).Put("/actions", s.putActions)
	s.r.With(api.AllowQuery("outcome", "limit")).Get("/actions/log", s.actionLog)
	s.r.With(api.AllowQuery("limit")).Get("/actions/proposals", s.proposals)
	s.r.With(api.AllowQuery("status", "limit")).Get("/actions/checks", s.checks)
}

// checks lists the follow-up checks of this agent's actions, newest first.
func (s *Server) checks(w http.ResponseWriter, r *http.Request) {
	limit, msg := limitParam(r)
	if msg != "" {
		WriteError(w, http.StatusBadRequest, msg)
		return
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.CheckFixed, store.CheckNotFixed, store.CheckUnknown:
	default:
		WriteError(w, http.StatusBadRequest, "status "+strconv.Quote(status)+": want fixed, not_fixed or unknown")
		return
	}
	cs, err := s.d.Store.ListChecks(r.Context(), store.CheckFilter{Status: status}, limit)
	if err != nil {
		WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	out := make([]api.CheckView, len(cs))
	for i, c := range cs {
		out[i] = CheckView(c)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": out})
}

// CheckView renders one check.
func CheckView(c store.ActionCheck) api.CheckView {
	return api.CheckView{ID: c.ID, ActionID: c.ActionID, Agent: c.Agent, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
		Container: c.Container, Status: c.Status, Detail: c.Detail, PageKey: c.PageKey, Paged: c.Paged, At: c.At}
}

func (s *Server) getActions(w http.ResponseWriter, r *http.Request) {
	st, err := s.d.Store.ActionsState(r.Context())
	if err != nil {
		WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, killswitch.View(st))
}

func (s *Server) putActions(w http.ResponseWriter, r *http.Request) {
	var in api.ActionsSwitch
	if !DecodeStrict(w, r, &in) {
		return
	}
	st, err := killswitch.Parse(in, "agent API")
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.d.Store.SetActionsState(r.Context(), st); err != nil {
		WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	st, err = s.d.Store.ActionsState(r.Context())
	if err != nil {
		WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	s.d.Log.Info("kill switch set", zapSwitch(st)...)
	WriteJSON(w, http.StatusOK, killswitch.View(st))
}

func limitParam(r *http.Request) (int, string) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return store.DefaultLimit, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxLimit {
		return 0, "limit " + strconv.Quote(v) + ": want an integer from 1 to " + strconv.Itoa(store.MaxLimit)
	}
	return n, ""
}

func (s *Server) actionLog(w http.ResponseWriter, r *http.Request) {
	limit, msg := limitParam(r)
	if msg != "" {
		WriteError(w, http.StatusBadRequest, msg)
		return
	}
	outcome := r.URL.Query().Get("outcome")
	switch outcome {
	case "", store.ActionDone, store.ActionProposed, store.ActionRecommended, store.ActionRefused:
	default:
		WriteError(w, http.StatusBadRequest, "outcome "+strconv.Quote(outcome)+": want done, proposed, recommended or refused")
		return
	}
	s.writeActions(w, r, limit, outcome)
}

// proposals lists what waits for a human: proposals (shadow mode) and
// recommendations (over a budget), newest first.
func (s *Server) proposals(w http.ResponseWriter, r *http.Request) {
	limit, msg := limitParam(r)
	if msg != "" {
		WriteError(w, http.StatusBadRequest, msg)
		return
	}
	s.writeActions(w, r, limit, store.ActionProposed, store.ActionRecommended)
}

func (s *Server) writeActions(w http.ResponseWriter, r *http.Request, limit int, outcomes ...string) {
	var all []store.ActionRecord
	for _, o := range outcomes {
		rs, err := s.d.Store.ListActions(r.Context(), store.ActionFilter{Outcome: o}, limit)
		if err != nil {
			WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
			return
		}
		all = append(all, rs...)
	}
	SortActions(all)
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]api.ActionView, len(all))
	for i, a := range all {
		out[i] = ActionView(a)
		if a.Outcome != store.ActionDone {
			continue
		}
		cs, err := s.d.Store.ListChecks(r.Context(), store.CheckFilter{ActionID: a.ID}, 20)
		if err != nil {
			WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
			return
		}
		for _, c := range cs {
			out[i].Checks = append(out[i].Checks, CheckView(c))
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": out})
}

// ActionView renders one record.
func ActionView(a store.ActionRecord) api.ActionView {
	return api.ActionView{ID: a.ID, Agent: a.Agent, RunID: a.RunID, Action: a.Action, Namespace: a.Namespace, Kind: a.Kind,
		Name: a.Name, Container: a.Container, Outcome: a.Outcome, Old: a.Old, New: a.New, Change: a.Change, Why: a.Why, At: a.At}
}

// SortActions orders records newest first.
func SortActions(rs []store.ActionRecord) {
	slices.SortFunc(rs, func(a, b store.ActionRecord) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

func zapSwitch(st store.ActionsState) []zap.Field {
	return []zap.Field{zap.Bool("paused", st.Paused), zap.String("reason", st.Reason), zap.String("by", st.By)}
}

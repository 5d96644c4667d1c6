package server

import (
	"errors"
	"net/http"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/lifecycle"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// findingLives is GET /findings/lifecycle: the findings' lives this
// agent's sweeps observed (docs/MANUAL.md, "Findings have a life"), open ones
// by default, newest first by first sighting.
func (s *Server) findingLives(w http.ResponseWriter, r *http.Request) {
	q, err := lifecycle.ParseQuery(r.URL.Query(), s.now())
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	states, next, err := s.d.Store.ListFindingStates(r.Context(), q.Filter, q.Page)
	switch {
	case errors.Is(err, store.ErrInvalid):
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		WriteError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	out := struct {
		Items      []api.FindingStateView `json:"items"`
		NextCursor string                 `json:"next_cursor,omitempty"`
	}{Items: make([]api.FindingStateView, 0, len(states)), NextCursor: next}
	for _, st := range states {
		out.Items = append(out.Items, lifecycle.View(st))
	}
	WriteJSON(w, http.StatusOK, out)
}

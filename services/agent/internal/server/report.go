package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

// getReport is GET /runs/{id}/report: the run and its trace as one
// self-contained HTML page.
func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	rec, err := s.d.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no run %q", id))
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading run: "+err.Error())
		return
	}
	evs, err := s.d.Store.Events(r.Context(), id)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading trace: "+err.Error())
		return
	}
	page, err := tracereport.Render(tracereport.Page{
		Title: fmt.Sprintf("%s run %s", s.d.Engine.Agent().Name, id),
		Runs: []tracereport.Run{{RunResult: ResultOf(rec), AgentName: s.d.Engine.Agent().Name, Task: rec.Task,
			Caller: rec.Caller, SocialDepth: rec.SocialDepth, Trace: evs}},
	})
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rendering: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(page)
}

package server

import (
	"fmt"
	"net/http"

	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

// getReport is GET /runs/{id}/report: the run and its trace as one
// self-contained HTML page.
func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	rec, evs, ok := s.loadRun(w, r)
	if !ok {
		return
	}
	name := s.d.Engine.Agent().Name
	runs := []tracereport.Run{{RunResult: ResultOf(rec), AgentName: name, Task: rec.Task,
		Caller: rec.Caller, SocialDepth: rec.SocialDepth, Trace: evs}}
	page, err := tracereport.Render(tracereport.Page{
		Title: fmt.Sprintf("%s run %s", name, rec.ID), Runs: runs, Outcome: tracereport.Conclude(runs),
	})
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rendering: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(page)
}

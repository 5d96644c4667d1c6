// Package pulseserver is the pulse's HTTP side: GET /pulse shows every task
// with its last run and next due time and the effective settings; POST
// /pulse runs the next due task now (what an in-cluster CronJob or the core
// calls), POST /pulse?task=N runs task N. It also adapts the engine to the
// pulse (EngineRunner) and to post_report (ReportTool).
package pulseserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// Handler serves /pulse.
type Handler struct {
	s   *pulse.Scheduler
	log *zap.Logger
}

// New builds the handler.
func New(s *pulse.Scheduler, log *zap.Logger) *Handler {
	if log == nil {
		log = zap.NewNop()
	}
	return &Handler{s: s, log: log}
}

// Mount adds GET /pulse and POST /pulse to r; the router's auth guard
// (server.Guard) protects both.
func (h *Handler) Mount(r chi.Router) {
	r.Get("/pulse", h.get)
	r.Post("/pulse", h.post)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	server.WriteJSON(w, http.StatusOK, h.s.Status(r.Context()))
}

// post runs a task and answers with what the tick did, the run's result
// included. The run does not depend on the request: a client that hangs up
// does not cancel it.
func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	var (
		res pulse.TickResult
		err error
	)
	q := r.URL.Query()
	for k := range q {
		if k != "task" {
			server.WriteError(w, http.StatusBadRequest, fmt.Sprintf("unknown query parameter %q (only task=N)", k))
			return
		}
	}
	if raw, ok := q["task"]; ok {
		n, perr := strconv.Atoi(strings.TrimSpace(raw[0]))
		if perr != nil || len(raw) != 1 {
			server.WriteError(w, http.StatusBadRequest, fmt.Sprintf("task=%q is not a task index (a whole number from 0 to %d; GET /pulse lists them)", strings.Join(raw, ","), len(h.s.Tasks())-1))
			return
		}
		res, err = h.s.RunTask(r.Context(), n, pulse.TriggerHTTP)
	} else {
		res, err = h.s.RunNext(r.Context(), pulse.TriggerHTTP)
	}
	switch {
	case errors.Is(err, pulse.ErrUnknownTask):
		server.WriteError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, pulse.ErrBusy):
		server.WriteError(w, http.StatusConflict, err.Error()+"; try again when it has finished")
	case errors.Is(err, pulse.ErrNotLeader):
		server.WriteError(w, http.StatusConflict, err.Error()+": only the leader pulses; retry, or call the leader")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		server.WriteError(w, http.StatusServiceUnavailable, "pulse: "+err.Error())
	case err != nil:
		h.log.Warn("POST /pulse failed", zap.Error(err))
		server.WriteError(w, http.StatusServiceUnavailable, err.Error())
	default:
		server.WriteJSON(w, http.StatusOK, res)
	}
}

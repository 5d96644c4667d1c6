package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/kubecrew/kubecrew/services/core/internal/events"
)

// EventSource is the core's change stream (*events.Broker).
type EventSource interface {
	Subscribe() (<-chan events.Event, func())
}

// keepAlive is how often an idle stream sends a comment, so proxies and
// browsers keep it open.
const keepAlive = 15 * time.Second

// events is GET /api/v1/events: every decision and investigation change
// from now on as Server-Sent Events ("event: decision" or "event:
// investigation", "data:" the change as one line of JSON). A browser's
// EventSource reconnects by itself (retry: 3s).
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteError(w, http.StatusInternalServerError, "this server cannot stream")
		return
	}
	ch, cancel := s.Events.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 3000\n: connected\n\n")
	fl.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-ch:
			if !ok {
				return
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, e.Data); err != nil {
				return
			}
			fl.Flush()
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

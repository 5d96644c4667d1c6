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

// streamWrite bounds one write of the event stream.
const streamWrite = 10 * time.Second

// events is GET /api/v1/events: every decision and investigation change
// from now on as Server-Sent Events ("event: decision" or "event:
// investigation", "data:" the change as one line of JSON). A browser's
// EventSource reconnects by itself (retry: 3s).
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	// The stream outlives the server's WriteTimeout: each write sets its
	// own deadline instead, so a reader that stops reading is cut after
	// streamWrite and one that reads stays (docs/MANUAL.md, "Authentication").
	rc := http.NewResponseController(w)
	write := func(format string, args ...any) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(streamWrite)); err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	ch, cancel := s.Events.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if err := rc.SetWriteDeadline(time.Now().Add(streamWrite)); err != nil {
		WriteError(w, http.StatusInternalServerError, "this server cannot stream: %v", err)
		return
	}
	w.WriteHeader(http.StatusOK)
	if !write("retry: 3000\n: connected\n\n") {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-ch:
			if !ok || !write("event: %s\ndata: %s\n\n", e.Kind, e.Data) {
				return
			}
		case <-tick.C:
			if !write(": keep-alive\n\n") {
				return
			}
		}
	}
}

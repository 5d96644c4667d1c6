package api

import (
	"net/http"
	"time"
)

// Timeouts bound how long one client may hold a connection of either
// service (docs/MANUAL.md, "Authentication": slow clients). Write bounds a whole
// answer: it is the longest one the service gives (a blocking run) plus a
// margin; a stream that outlives it (the core's event stream) sets its own
// deadline before each write (http.ResponseController).
type Timeouts struct {
	ReadHeader     time.Duration // the request line and headers
	Read           time.Duration // the whole request, body included
	Write          time.Duration // the whole answer
	Idle           time.Duration // a kept-alive connection between requests
	MaxHeaderBytes int
}

// Default timeouts of both services. A request body is at most a few MiB
// (a webhook storm), read at LAN speed: 30s is ample and cuts a client
// that dribbles it.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	// WriteMargin is what Write adds to the longest answer.
	WriteMargin = time.Minute
)

// DefaultTimeouts are the services' timeouts for an answer that may take
// longest (a blocking run: RUN_TIMEOUT, AGENT_CALL_TIMEOUT).
func DefaultTimeouts(longest time.Duration) Timeouts {
	return Timeouts{ReadHeader: DefaultReadHeaderTimeout, Read: DefaultReadTimeout, Write: longest + WriteMargin,
		Idle: DefaultIdleTimeout, MaxHeaderBytes: DefaultMaxHeaderBytes}
}

// NewServer is the HTTP server of either service: h behind the timeouts.
func NewServer(h http.Handler, t Timeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    t.MaxHeaderBytes,
	}
}

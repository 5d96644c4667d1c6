package llm

import (
	"fmt"
	"strings"
	"time"
)

// Kinds of attempt outcome. They are the Kind of an *Error and the outcome
// passed to Config.Observe (plus OutcomeOK), so they make a bounded metric
// label.
const (
	OutcomeOK           = "ok"
	KindTimeout         = "timeout"          // no answer within Config.Timeout (or HTTP 408): failover
	KindConnection      = "connection"       // refused, reset, closed, DNS: failover (or the one retry)
	KindHTTP5xx         = "http_5xx"         // server or gateway error: failover
	KindRateLimited     = "http_429"         // rate limited: failover
	KindHTML            = "html"             // an HTML page instead of JSON: failover
	KindInvalidResponse = "invalid_response" // not a chat completion: failover
	KindAuth            = "auth"             // 401/403: fail fast
	KindNotFound        = "not_found"        // 404: fail fast
	KindHTTP4xx         = "http_4xx"         // 400 and other 4xx: fail fast
	KindInvalidRequest  = "invalid_request"  // refused before sending (go-openai validation): fail fast
	KindCanceled        = "canceled"         // the caller's context ended: stop
)

// Error is one failed attempt against one endpoint.
type Error struct {
	Endpoint string // endpoint name, e.g. "primary"
	Status   int    // HTTP status; 0 when no HTTP answer was received
	Kind     string // one of the Kind constants
	Msg      string // human-readable, names the endpoint and what to check
	Err      error  // underlying cause when there is one (context, network)
	// RetryAfter is the wait a 429 or 503 asked for (Retry-After or
	// retry-after-ms); zero when the answer named none.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return "llm: " + e.Msg }

// Unwrap returns the underlying cause, so that, for example,
// errors.Is(err, context.Canceled) works on a canceled call.
func (e *Error) Unwrap() error { return e.Err }

// Failover reports whether the next endpoint should be tried after this
// failure. Configuration errors (auth, not found, other 4xx) and a canceled
// caller do not fail over.
func (e *Error) Failover() bool {
	switch e.Kind {
	case KindTimeout, KindConnection, KindHTTP5xx, KindRateLimited, KindHTML, KindInvalidResponse:
		return true
	}
	return false
}

// AttemptsError is returned when more than one attempt failed: it lists every
// attempt in order. errors.As(err, &target *Error) finds the first; Last
// gives the one that ended the call.
type AttemptsError struct {
	Failures []*Error
}

func (e *AttemptsError) Error() string {
	var b strings.Builder
	last := e.Last()
	if last != nil && !last.Failover() {
		fmt.Fprintf(&b, "llm: gave up after %d attempts: ", len(e.Failures))
	} else {
		fmt.Fprintf(&b, "llm: all endpoints failed (%d attempts): ", len(e.Failures))
	}
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString("; then ")
		}
		b.WriteString(f.Msg)
	}
	return b.String()
}

// Unwrap exposes every attempt's *Error to errors.Is and errors.As.
func (e *AttemptsError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f
	}
	return out
}

// Last is the failure that ended the call.
func (e *AttemptsError) Last() *Error {
	if len(e.Failures) == 0 {
		return nil
	}
	return e.Failures[len(e.Failures)-1]
}

// joinFailures returns the error Chat reports: the single *Error, or an
// *AttemptsError when several attempts failed.
func joinFailures(failures []*Error) error {
	if len(failures) == 1 {
		return failures[0]
	}
	return &AttemptsError{Failures: failures}
}

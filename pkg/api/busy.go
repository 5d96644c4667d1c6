package api

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// BusyError is an agent's answer when it is at capacity
// (AGENT_MAX_CONCURRENT_RUNS, or an alert run already in flight): POST /run
// answers 429 with Retry-After, A2A a JSON-RPC server error whose text
// starts "busy: ". Callers treat it as busy, not as a failure: the work was
// not started and may be sent again after RetryAfter.
type BusyError struct {
	// Reason says what is full, e.g. "4 runs in flight (AGENT_MAX_CONCURRENT_RUNS=4)".
	Reason     string
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("busy: %s; retry after %ds", e.Reason, RetryAfterSeconds(e.RetryAfter))
}

// RetryAfterSeconds is d as a Retry-After value: whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

var busyText = regexp.MustCompile(`busy: (.*); retry after (\d+)s`)

// ParseBusy reads a BusyError back from its text, wherever it sits in an
// error message (A2A carries it as text).
func ParseBusy(s string) (*BusyError, bool) {
	m := busyText.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return nil, false
	}
	return &BusyError{Reason: strings.TrimSpace(m[1]), RetryAfter: time.Duration(n) * time.Second}, true
}

// ParseRetryAfter reads an HTTP Retry-After header given in seconds (the
// form the agents send); anything else is 0.
func ParseRetryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

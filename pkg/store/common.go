package store

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// ErrInvalid is wrapped by every error about bad input (an invalid cursor,
// memory path, missing id, unknown decision): callers map it to a 400.
var ErrInvalid = errors.New("invalid input")

// ErrConflict is returned when a record with the same id already exists.
var ErrConflict = errors.New("already exists")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// limit applies DefaultLimit and MaxLimit.
func (p Page) limit() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// cursor is a position in a newest-first list: the (time, id) of the last
// item of the previous page. Items strictly older (or equally old with a
// smaller id) follow.
type cursor struct {
	at time.Time
	id string
	ok bool
}

const cursorVersion = "c1"

func encodeCursor(at time.Time, id string) string {
	raw := cursorVersion + ":" + strconv.FormatInt(at.UnixMicro(), 10) + ":" + id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, invalidf("cursor %q is not one this store issued", s)
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" {
		return cursor{}, invalidf("cursor %q is not one this store issued", s)
	}
	us, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return cursor{}, invalidf("cursor %q is not one this store issued", s)
	}
	return cursor{at: time.UnixMicro(us).UTC(), id: parts[2], ok: true}, nil
}

// after reports whether an item at (at, id) comes after the cursor in a
// newest-first list ordered by (at desc, id desc).
func (c cursor) after(at time.Time, id string) bool {
	if !c.ok {
		return true
	}
	if at.Equal(c.at) {
		return id < c.id
	}
	return at.Before(c.at)
}

// newerFirst orders (at, id) pairs newest first, ties by id descending.
func newerFirst(at1 time.Time, id1 string, at2 time.Time, id2 string) bool {
	if !at1.Equal(at2) {
		return at1.After(at2)
	}
	return id1 > id2
}

// ts normalises a time to what Postgres keeps: UTC, microseconds.
func ts(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

func tsPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// newID returns a time-ordered unique id.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Alert decisions.
const (
	DecisionDispatched = "dispatched"
	DecisionDeduped    = "deduped"
	DecisionCooldown   = "cooldown"
	DecisionBusy       = "busy"
	DecisionIgnored    = "ignored"
	DecisionResolved   = "resolved"
	// DecisionRejected is an alert the core could not take (a blank,
	// over-long or control-character fingerprint or label): recorded with
	// its reason, it changes no alert state.
	DecisionRejected = "rejected"
	// DecisionJoined is an alert that joined the running investigation of
	// its incident (its correlation key) instead of starting one.
	DecisionJoined = "joined"
	// DecisionDropped is an incident dropped from a full busy queue (the
	// lowest severity goes first).
	DecisionDropped = "dropped"
)

func validDecision(d string) bool {
	switch d {
	case DecisionDispatched, DecisionDeduped, DecisionCooldown, DecisionBusy, DecisionIgnored, DecisionResolved, DecisionRejected,
		DecisionJoined, DecisionDropped:
		return true
	}
	return false
}

// A2A outcomes and directions are free text for the store; only ids are
// required.

// required checks an identifier: present, valid UTF-8, no NUL (a key is
// never silently rewritten, so it is refused instead).
func required(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return invalidf("%s is required", what)
	}
	if clean(v) != v {
		return invalidf("%s %q holds NUL or invalid UTF-8", what, v)
	}
	return nil
}

// checkKey checks an id or key a caller looks a record up by: valid UTF-8
// without control characters (NUL, C0, DEL, C1). Such an id was never
// stored, and Postgres refuses NUL outright: it is bad input (a 400), not
// a missing record and not a database failure.
func checkKey(what, v string) error {
	if !api.PlainText(v) {
		return invalidf("%s %q holds a control character or invalid UTF-8", what, v)
	}
	return nil
}

// NewID returns a time-ordered unique id, the kind the stores assign: a
// caller that needs a record's id before storing it takes one here.
func NewID() string { return newID() }

package a2a

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Metadata keys on every kubecrew A2A message (docs/ARCHITECTURE.md). Extend,
// never rename.
const (
	KeyVerb         = "kubecrew/verb"
	KeySocialDepth  = "kubecrew/social_depth"
	KeyCaller       = "kubecrew/caller"
	KeyDiscussionID = "kubecrew/discussion_id"
	KeyTraceID      = "kubecrew/trace_id"
	// KeyCallerRunID is the sender's run id, so the receiver's audit entry
	// links both runs (an extension of the five keys above).
	KeyCallerRunID = "kubecrew/caller_run_id"
	// KeyBudgetMS is the sender's time budget for the callee's run in
	// milliseconds (pkg/api/budget.go): sent on blocking messages, whose
	// sender waits for the answer.
	KeyBudgetMS = "kubecrew/budget_ms"
)

// Verb is what the sender wants.
type Verb string

// The three verbs. A message without a verb is an ask.
const (
	VerbAsk      Verb = "ask"
	VerbNotify   Verb = "notify"
	VerbDelegate Verb = "delegate"
)

// Verbs lists the valid verbs.
var Verbs = []Verb{VerbAsk, VerbNotify, VerbDelegate}

// ParseVerb validates a verb; "" is an ask.
func ParseVerb(s string) (Verb, error) {
	switch v := Verb(strings.ToLower(strings.TrimSpace(s))); v {
	case "":
		return VerbAsk, nil
	case VerbAsk, VerbNotify, VerbDelegate:
		return v, nil
	}
	return "", fmt.Errorf("unknown %s %q; valid: ask, notify, delegate", KeyVerb, s)
}

// Meta is the kubecrew metadata of one message.
type Meta struct {
	Verb Verb
	// Depth is the message's social depth; HasDepth reports whether the
	// sender said it at all (a missing depth from an agent fails closed).
	Depth        int
	HasDepth     bool
	Caller       string
	DiscussionID string
	TraceID      string
	CallerRunID  string
	// BudgetMS is the callee's time budget (0: none sent).
	BudgetMS int64
}

// maxIDLen bounds ids and names taken from the wire.
const maxIDLen = 200

// ParseMeta reads the kubecrew keys of a message's metadata. Unknown keys
// are ignored (other clients may add theirs); a kubecrew key with a value
// of the wrong type is an error naming it.
func ParseMeta(md map[string]any) (Meta, error) {
	m := Meta{Verb: VerbAsk}
	if v, ok := md[KeyVerb]; ok {
		s, ok := v.(string)
		if !ok {
			return Meta{}, fmt.Errorf("%s must be a string, got %T", KeyVerb, v)
		}
		verb, err := ParseVerb(s)
		if err != nil {
			return Meta{}, err
		}
		m.Verb = verb
	}
	if v, ok := md[KeySocialDepth]; ok && v != nil {
		d, err := depthValue(v)
		if err != nil {
			return Meta{}, err
		}
		m.Depth, m.HasDepth = d, true
	}
	if v, ok := md[KeyBudgetMS]; ok && v != nil {
		ms, err := wholeNumber(KeyBudgetMS, v, maxBudgetMS)
		if err != nil {
			return Meta{}, err
		}
		m.BudgetMS = int64(ms)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{KeyCaller, &m.Caller}, {KeyDiscussionID, &m.DiscussionID}, {KeyTraceID, &m.TraceID}, {KeyCallerRunID, &m.CallerRunID}} {
		v, ok := md[f.key]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Meta{}, fmt.Errorf("%s must be a string, got %T", f.key, v)
		}
		*f.dst = safetext.Clean(strings.TrimSpace(s), maxIDLen)
	}
	return m, nil
}

// depthValue accepts a JSON number (float64 after decoding), a json.Number,
// a Go integer or a decimal string; anything else, a fraction or a negative
// number is an error.
func depthValue(v any) (int, error) {
	return wholeNumber(KeySocialDepth, v, 1e6)
}

// maxBudgetMS bounds a budget from the wire: a day.
const maxBudgetMS = 24 * 3600 * 1000

// wholeNumber reads metadata key's value v as depthValue describes, at most
// limit.
func wholeNumber(key string, v any, limit float64) (int, error) {
	bad := func() (int, error) {
		return 0, fmt.Errorf("%s must be a non-negative whole number up to %.0f, got %v", key, limit, v)
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case json.Number:
		n, err := x.Float64()
		if err != nil {
			return bad()
		}
		f = n
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return bad()
		}
		f = float64(n)
	default:
		return bad()
	}
	if f < 0 || f != math.Trunc(f) || f > limit {
		return bad()
	}
	return int(f), nil
}

// Map returns the metadata to put on a message. Empty values are left out,
// except the depth, which an agent always sends.
func (m Meta) Map() map[string]any {
	out := map[string]any{KeyVerb: string(m.Verb), KeySocialDepth: m.Depth}
	if m.BudgetMS > 0 {
		out[KeyBudgetMS] = m.BudgetMS
	}
	for k, v := range map[string]string{KeyCaller: m.Caller, KeyDiscussionID: m.DiscussionID, KeyTraceID: m.TraceID, KeyCallerRunID: m.CallerRunID} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

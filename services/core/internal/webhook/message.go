// Package webhook decodes and validates Alertmanager's webhook (payload
// version 4) and serves POST /api/v1/alerts.
package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	// encoding/json's semantics (case-insensitive names, the last of
	// duplicate names, invalid UTF-8 replaced, the same error types) on the
	// v2 implementation, which decodes a webhook in about half the time
	// with half the allocations (BenchmarkDecode; docs/MANUAL.md, "Benchmark: the
	// core beside Alertmanager"). It is the code encoding/json runs under
	// GOEXPERIMENT=jsonv2.
	json "github.com/go-json-experiment/json/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// MaxBodyBytes is the default cap of a webhook body (WEBHOOK_MAX_BYTES):
// a storm of 10,000 alerts of about 1 KB each fits, with room.
const MaxBodyBytes = 32 << 20

// Message is Alertmanager's webhook body, version 4. Unknown fields are
// accepted: newer Alertmanagers add some (notification_reason in 0.28+).
type Message struct {
	Version            string            `json:"version"`
	GroupKey           string            `json:"groupKey"`
	TruncatedAlerts    int               `json:"truncatedAlerts"`
	Status             string            `json:"status"`
	Receiver           string            `json:"receiver"`
	GroupLabels        map[string]string `json:"groupLabels"`
	CommonLabels       map[string]string `json:"commonLabels"`
	CommonAnnotations  map[string]string `json:"commonAnnotations"`
	ExternalURL        string            `json:"externalURL"`
	NotificationReason string            `json:"notification_reason,omitempty"`
	Alerts             []Alert           `json:"alerts"`
}

// Alert is one alert of a webhook. EndsAt is 0001-01-01T00:00:00Z while the
// alert fires.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	// hash is ContentHash taken before Bound cut the annotations (a
	// streamed storm's alert); "" when it is to be computed.
	hash string

	// badUTF8: the body held bytes that are no UTF-8 and the decoder made
	// U+FFFD of them in this alert's labels (markInvalidUTF8).
	badUTF8 bool
}

// Alertname is the alert's alertname label.
func (a Alert) Alertname() string { return a.Labels["alertname"] }

// Namespace is the alert's namespace label ("" when it has none).
func (a Alert) Namespace() string { return a.Labels["namespace"] }

// ContentHash hashes the labels and annotations: the same alert with the
// same content is not new information; a changed annotation is. The bytes
// hashed are "labels:<n>\n" then "<len>:<name>=<len>:<value>\n" per label
// in name order, the same for annotations: the stored states' hashes
// (alert_state.content_hash) stay valid across versions.
func (a Alert) ContentHash() string {
	if a.hash != "" {
		return a.hash
	}
	var buf [512]byte
	b := appendMap(buf[:0], "labels", a.Labels)
	b = appendMap(b, "annotations", a.Annotations)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

func appendMap(b []byte, tag string, m map[string]string) []byte {
	b = append(b, tag...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(len(m)), 10)
	b = append(b, '\n')
	for _, k := range sortedKeys(m) {
		v := m[k]
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
		b = append(b, '\n')
	}
	return b
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// BadRequestError is input the sender must fix (HTTP 400): Alertmanager
// does not retry it.
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

func badf(format string, args ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, args...)}
}

// TooLargeError is a body over the cap (HTTP 413).
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("body larger than %d bytes", e.Limit)
}

// bodies recycles the buffers webhook bodies are read into (what the
// message keeps is copied out of them).
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Decode reads and validates one webhook body (r is an
// http.MaxBytesReader: the cap is its limit). A body up to streamAfter is
// read whole and decoded in one pass; only a body that does not decode is
// read again, as a stream, to say what is wrong with it. A larger one is
// decoded as it is read, alert by alert (decodeStream).
func Decode(r io.Reader) (Message, error) {
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			bodies.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(streamAfter)+1)); err != nil {
		if tooLarge(err) {
			return Message{}, tooLargeError(err)
		}
		return Message{}, err
	}
	if buf.Len() > streamAfter {
		return decodeStream(io.MultiReader(bytes.NewReader(buf.Bytes()), r))
	}
	var m Message
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		return Message{}, explain(buf.Bytes())
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	if !utf8.Valid(buf.Bytes()) {
		m.markInvalidUTF8()
	}
	return m, nil
}

// markInvalidUTF8 flags the alerts whose labels the decoder repaired: it
// turns bytes that are no UTF-8 into U+FFFD, so after decoding only that
// mark is left of them, and an alert carrying it in a label of a body that
// was not UTF-8 is rejected (Alert.Problem) rather than investigated under
// a label nobody sent.
func (m *Message) markInvalidUTF8() {
	for i := range m.Alerts {
		m.Alerts[i].markInvalidUTF8()
	}
}

// markInvalidUTF8 flags a whose labels carry the decoder's U+FFFD; the
// streaming decoder calls it for an alert whose own bytes were no UTF-8.
func (a *Alert) markInvalidUTF8() {
	for k, v := range a.Labels {
		if strings.ContainsRune(k, utf8.RuneError) || strings.ContainsRune(v, utf8.RuneError) {
			a.badUTF8 = true
			return
		}
	}
}

// explain says why body is no webhook: empty, malformed (where), a field
// of the wrong type, or data after the object.
func explain(body []byte) error {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return badf("empty body: want an Alertmanager webhook (version 4)")
		case errors.As(err, &se):
			return badf("malformed JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			return badf("malformed webhook: field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
		default:
			return badf("malformed JSON: %v", err)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badf("malformed JSON: data after the webhook object")
	}
	return badf("malformed JSON") // json.Unmarshal refused what the stream took
}

func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// tooLargeError is the 413 of a read that passed the cap.
func tooLargeError(err error) error {
	var mbe *http.MaxBytesError
	errors.As(err, &mbe)
	return &TooLargeError{Limit: mbe.Limit}
}

// Validate checks the message as a whole: what makes it no Alertmanager
// webhook at all (a 400). One alert's own problem rejects that alert
// alone (Alert.Problem), so the rest of its group is still decided.
func (m Message) Validate() error {
	if m.Version != "4" {
		if m.Version == "" {
			return badf("missing version: want Alertmanager webhook version \"4\"")
		}
		return badf("unsupported webhook version %q: want \"4\"", m.Version)
	}
	if m.Status != "firing" && m.Status != "resolved" {
		if m.Status == "" {
			return badf("missing status")
		}
		return badf("unknown status %q: want firing or resolved", m.Status)
	}
	if m.Alerts == nil {
		return badf("missing alerts")
	}
	if len(m.Alerts) == 0 {
		return badf("alerts is empty")
	}
	return nil
}

// Limits on one alert's identity. Prometheus and Alertmanager set none; a
// fingerprint is 16 hex digits, and a label past these is not one an
// alerting rule meant.
const (
	MaxFingerprint = 128
	MaxLabelName   = 256
	MaxLabelValue  = 4096
	MaxLabels      = 16 << 10 // all names and values together
)

// Problem says why the core cannot take this alert ("" when it can): a
// missing or unknown status, a blank, over-long or control-character
// fingerprint, a missing alertname, an over-long label or one holding a
// control character or invalid UTF-8. Such an alert is recorded as
// rejected with this reason; it never fails its group.
func (a Alert) Problem() string {
	switch {
	case a.Status == "":
		return "missing status"
	case a.Status != "firing" && a.Status != "resolved":
		return fmt.Sprintf("unknown status %q: want firing or resolved", Printable(a.Status, 32))
	case strings.TrimSpace(a.Fingerprint) == "":
		return "fingerprint is blank"
	case len(a.Fingerprint) > MaxFingerprint:
		return fmt.Sprintf("fingerprint is %d bytes, the limit is %d", len(a.Fingerprint), MaxFingerprint)
	case !api.PlainText(a.Fingerprint):
		return "fingerprint holds a control character or invalid UTF-8"
	case strings.TrimSpace(a.Labels["alertname"]) == "":
		return "missing labels.alertname"
	}
	total, bad := 0, false
	for k, v := range a.Labels {
		total += len(k) + len(v)
		bad = bad || badLabel(k, v) != ""
	}
	if total > MaxLabels {
		return fmt.Sprintf("labels are %d bytes together, the limit is %d", total, MaxLabels)
	}
	if a.badUTF8 {
		for _, k := range sortedKeys(a.Labels) {
			if strings.ContainsRune(k, utf8.RuneError) || strings.ContainsRune(a.Labels[k], utf8.RuneError) {
				return fmt.Sprintf("label %s holds invalid UTF-8", Printable(k, 64))
			}
		}
	}
	if !bad {
		return ""
	}
	// The first bad label in name order is named: the same reason for the
	// same alert every time.
	for _, k := range sortedKeys(a.Labels) {
		if why := badLabel(k, a.Labels[k]); why != "" {
			return why
		}
	}
	return ""
}

// badLabel says what is wrong with one label ("" when nothing is).
func badLabel(k, v string) string {
	switch {
	case len(k) > MaxLabelName:
		return fmt.Sprintf("label name %q… is %d bytes, the limit is %d", Printable(k, 32), len(k), MaxLabelName)
	case !api.PlainText(k):
		return fmt.Sprintf("label name %q holds a control character or invalid UTF-8", Printable(k, 64))
	case len(v) > MaxLabelValue:
		return fmt.Sprintf("label %s is %d bytes, the limit is %d", Printable(k, 64), len(v), MaxLabelValue)
	case !api.PlainProse(v):
		return fmt.Sprintf("label %s holds a control character or invalid UTF-8", Printable(k, 64))
	}
	return ""
}

// Printable renders s for a decision or a log line: control characters and
// invalid bytes escaped (\x00, \u0085), at most max bytes, "…" when cut.
func Printable(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && n == 1:
			piece = fmt.Sprintf("\\x%02x", s[i])
		case api.Control(r):
			if r < 0x80 {
				piece = fmt.Sprintf("\\x%02x", r)
			} else {
				piece = fmt.Sprintf("\\u%04x", r)
			}
		default:
			piece = s[i : i+n]
		}
		if b.Len()+len(piece) > max {
			b.WriteString("…")
			break
		}
		b.WriteString(piece)
		i += n
	}
	return b.String()
}

// Package webhook decodes and validates Alertmanager's webhook (payload
// version 4) and serves POST /api/v1/alerts.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"
)

// MaxBodyBytes caps a webhook body.
const MaxBodyBytes = 1 << 20

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
}

// Alertname is the alert's alertname label.
func (a Alert) Alertname() string { return a.Labels["alertname"] }

// Namespace is the alert's namespace label ("" when it has none).
func (a Alert) Namespace() string { return a.Labels["namespace"] }

// ContentHash hashes the labels and annotations: the same alert with the
// same content is not new information; a changed annotation is.
func (a Alert) ContentHash() string {
	h := sha256.New()
	writeMap := func(tag string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(h, "%s:%d\n", tag, len(keys))
		for _, k := range keys {
			fmt.Fprintf(h, "%d:%s=%d:%s\n", len(k), k, len(m[k]), m[k])
		}
	}
	writeMap("labels", a.Labels)
	writeMap("annotations", a.Annotations)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// BadRequestError is input the sender must fix (HTTP 400): Alertmanager
// does not retry it.
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

func badf(format string, args ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, args...)}
}

// TooLargeError is a body over MaxBodyBytes (HTTP 413).
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("body larger than %d bytes", e.Limit)
}

// Decode reads and validates one webhook body.
func Decode(r io.Reader) (Message, error) {
	var m Message
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		if tooLarge(err) {
			return Message{}, &TooLargeError{Limit: MaxBodyBytes}
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return Message{}, badf("empty body: want an Alertmanager webhook (version 4)")
		case errors.As(err, &se):
			return Message{}, badf("malformed JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			return Message{}, badf("malformed webhook: field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
		default:
			return Message{}, badf("malformed JSON: %v", err)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if tooLarge(err) {
			return Message{}, &TooLargeError{Limit: MaxBodyBytes}
		}
		return Message{}, badf("malformed JSON: data after the webhook object")
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// Validate checks what the core relies on.
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
	for i, a := range m.Alerts {
		switch {
		case a.Status == "":
			return badf("alerts[%d]: missing status", i)
		case a.Status != "firing" && a.Status != "resolved":
			return badf("alerts[%d]: unknown status %q: want firing or resolved", i, a.Status)
		case a.Fingerprint == "":
			return badf("alerts[%d]: missing fingerprint", i)
		case len(a.Fingerprint) > 128:
			return badf("alerts[%d]: fingerprint longer than 128 characters", i)
		case a.Labels["alertname"] == "":
			return badf("alerts[%d]: missing labels.alertname", i)
		}
	}
	return nil
}

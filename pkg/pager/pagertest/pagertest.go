// Package pagertest records incident APIs for tests: an httptest server
// per API that checks every request against the documented shape —
// PagerDuty's Events API v2 (POST /v2/enqueue) and Opsgenie's Alert API
// (POST /v2/alerts, POST /v2/alerts/{alias}/close?identifierType=alias) —
// answers what the real API answers (202 with its body, or the API's 4xx
// with the reason), and keeps what it accepted.
package pagertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// PDEvent is an accepted Events API v2 event.
type PDEvent struct {
	RoutingKey string     `json:"routing_key"`
	Action     string     `json:"event_action"`
	DedupKey   string     `json:"dedup_key"`
	Client     string     `json:"client"`
	ClientURL  string     `json:"client_url"`
	Links      []PDLink   `json:"links"`
	Images     []any      `json:"images"`
	Payload    *PDPayload `json:"payload"`
}

// PDLink is one of an event's links.
type PDLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// PDPayload is a trigger's payload.
type PDPayload struct {
	Summary   string            `json:"summary"`
	Source    string            `json:"source"`
	Severity  string            `json:"severity"`
	Timestamp string            `json:"timestamp"`
	Component string            `json:"component"`
	Group     string            `json:"group"`
	Class     string            `json:"class"`
	Details   map[string]string `json:"custom_details"`
}

// PagerDuty is a recorded Events API v2.
type PagerDuty struct {
	*httptest.Server
	RoutingKey string
	mu         sync.Mutex
	events     []PDEvent
	rejected   []string
}

// NewPagerDuty starts the recorded Events API; its routing key is a fresh
// 32-character integration key.
func NewPagerDuty(t testing.TB) *PagerDuty {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	p := &PagerDuty{RoutingKey: hex.EncodeToString(b)}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// Events returns the accepted events, in order.
func (p *PagerDuty) Events() []PDEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PDEvent(nil), p.events...)
}

// Rejected returns why each refused request was refused.
func (p *PagerDuty) Rejected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.rejected...)
}

// Count returns how many accepted events had action for dedupKey.
func (p *PagerDuty) Count(action, dedupKey string) int {
	n := 0
	for _, e := range p.Events() {
		if e.Action == action && e.DedupKey == dedupKey {
			n++
		}
	}
	return n
}

func (p *PagerDuty) serve(w http.ResponseWriter, r *http.Request) {
	invalid := func(code int, errs ...string) {
		p.mu.Lock()
		p.rejected = append(p.rejected, strings.Join(errs, "; "))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": errs})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" {
		invalid(http.StatusNotFound, r.Method+" "+r.URL.Path+": the Events API v2 is POST /v2/enqueue")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		invalid(http.StatusBadRequest, "Content-Type "+ct+": want application/json")
		return
	}
	var ev PDEvent
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 512<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		invalid(http.StatusBadRequest, "body: "+err.Error())
		return
	}
	if errs := p.check(ev); len(errs) > 0 {
		invalid(http.StatusBadRequest, errs...)
		return
	}
	if ev.DedupKey == "" { // the API assigns one to a trigger without
		ev.DedupKey = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "success", "message": "Event processed", "dedup_key": ev.DedupKey})
}

var pdSeverities = map[string]bool{"critical": true, "error": true, "warning": true, "info": true}

func (p *PagerDuty) check(ev PDEvent) []string {
	var errs []string
	if ev.RoutingKey != p.RoutingKey {
		errs = append(errs, "'routing_key' is invalid")
	}
	if len(ev.DedupKey) > 255 {
		errs = append(errs, "'dedup_key' must be at most 255 characters")
	}
	switch ev.Action {
	case "trigger":
		if ev.Payload == nil {
			return append(errs, "'payload' is required for trigger")
		}
		pl := *ev.Payload
		if pl.Summary == "" || len(pl.Summary) > 1024 {
			errs = append(errs, "'payload.summary' is missing or longer than 1024 characters")
		}
		if pl.Source == "" {
			errs = append(errs, "'payload.source' is missing")
		}
		if !pdSeverities[pl.Severity] {
			errs = append(errs, "'payload.severity' must be critical, error, warning or info")
		}
		if pl.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, pl.Timestamp); err != nil {
				errs = append(errs, "'payload.timestamp' is not ISO 8601")
			}
		}
		for _, l := range ev.Links {
			if l.Href == "" {
				errs = append(errs, "'links[].href' is missing")
			}
		}
	case "acknowledge", "resolve":
		if ev.DedupKey == "" {
			errs = append(errs, "'dedup_key' is required for "+ev.Action)
		}
		if ev.Payload != nil {
			errs = append(errs, "a "+ev.Action+" carries no payload")
		}
	default:
		errs = append(errs, "'event_action' must be trigger, acknowledge or resolve")
	}
	return errs
}

// Package pager pages a human through an incident API (docs/MANUAL.md, "The
// action envelope": verify, then escalate): PagerDuty Events API v2,
// Opsgenie's Alert API, or a generic JSON webhook. One incident is one
// correlation key — PagerDuty's dedup_key, Opsgenie's alias — triggered
// once and resolved once; the Escalator keeps that promise across retries
// and replicas by claiming the key in a ledger (the store) first.
package pager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Severities an incident carries (PagerDuty's payload.severity values).
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Incident is what a human is paged with.
type Incident struct {
	// Key correlates the trigger with its resolve: PagerDuty's dedup_key,
	// Opsgenie's alias (at most 255 characters).
	Key      string
	Summary  string // one line: what is wrong
	Severity string // critical|error|warning|info
	Source   string // the affected object, e.g. shop/Deployment/web
	// Component, Group and Class sort the incident (PagerDuty's payload
	// fields; Opsgenie tags).
	Component, Group, Class string
	// Details is the evidence, key by key.
	Details map[string]string
	// Link is the report a human opens first ("" = none).
	Link string
	At   time.Time
}

// Pager is one incident API.
type Pager interface {
	// Name is pagerduty, opsgenie or webhook.
	Name() string
	// Trigger opens (or updates) the incident for inc.Key.
	Trigger(ctx context.Context, inc Incident) error
	// Resolve closes the incident for key; note says why.
	Resolve(ctx context.Context, key, note string) error
}

// Config chooses and configures the incident API (PAGE_* settings).
type Config struct {
	// Target is pagerduty, opsgenie or webhook; "" or none: no paging.
	Target string
	// Key is PagerDuty's routing (integration) key or Opsgenie's API
	// integration key (GenieKey); unused by the webhook.
	Key string
	// URL overrides the API's base URL (PagerDuty: https://events.pagerduty.com,
	// Opsgenie: https://api.opsgenie.com — the EU ones are
	// events.eu.pagerduty.com and api.eu.opsgenie.com); for the webhook it
	// is the URL posted to, and required.
	URL    string
	Client *http.Client // nil: a client with a 15 s timeout
}

// ErrNoPager is New's answer when no target is configured.
var ErrNoPager = errors.New("no incident API configured (PAGE_TARGET)")

// New builds the configured pager; ErrNoPager when none is. Errors name
// what to fix.
func New(c Config) (Pager, error) {
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 15 * time.Second}
	}
	target := strings.ToLower(strings.TrimSpace(c.Target))
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("PAGE_URL %q: want an http(s) URL", c.URL)
		}
	}
	switch target {
	case "", "none":
		return nil, ErrNoPager
	case "pagerduty":
		if strings.TrimSpace(c.Key) == "" {
			return nil, errors.New("PAGE_TARGET=pagerduty needs PAGE_KEY: the routing key of an Events API v2 integration")
		}
		return newPagerDuty(c), nil
	case "opsgenie":
		if strings.TrimSpace(c.Key) == "" {
			return nil, errors.New("PAGE_TARGET=opsgenie needs PAGE_KEY: the key of an API integration (sent as GenieKey)")
		}
		return newOpsgenie(c), nil
	case "webhook":
		if c.URL == "" {
			return nil, errors.New("PAGE_TARGET=webhook needs PAGE_URL: where the JSON is posted")
		}
		return &Webhook{url: c.URL, client: c.Client}, nil
	default:
		return nil, fmt.Errorf("PAGE_TARGET %q: want pagerduty, opsgenie, webhook or none", c.Target)
	}
}

// WorkloadKey is the correlation key of a workload's incident: one per
// workload and container, whichever part of the fleet pages for it (a
// follow-up check whose fix did not work, an alert investigation that
// ended with a finding no agent may fix), so the two fold into one.
func WorkloadKey(namespace, kind, name, container string) string {
	f := api.Finding{Namespace: namespace, Kind: kind, Name: name, Container: container}
	return clip("kubecrew/"+strings.TrimSuffix(f.DeriveKey(), "-"), MaxKey)
}

// MaxKey is the longest correlation key both APIs take.
const MaxKey = 255

func checkIncident(inc Incident) error {
	if inc.Key == "" || len(inc.Key) > MaxKey {
		return fmt.Errorf("incident key %q: want 1 to %d characters", inc.Key, MaxKey)
	}
	if strings.TrimSpace(inc.Summary) == "" {
		return errors.New("an incident needs a summary")
	}
	switch inc.Severity {
	case SeverityCritical, SeverityError, SeverityWarning, SeverityInfo:
	default:
		return fmt.Errorf("incident severity %q: want critical, error, warning or info", inc.Severity)
	}
	return nil
}

// clip cuts s to n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

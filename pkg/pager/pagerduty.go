package pager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/PagerDuty/go-pagerduty"
)

// PagerDuty sends Events API v2 events (POST {base}/v2/enqueue) through
// PagerDuty's own Go client: a trigger with the incident's dedup_key, a
// resolve with the same key.
type PagerDuty struct {
	c          *pagerduty.Client
	routingKey string
}

var _ Pager = (*PagerDuty)(nil)

// DefaultPagerDutyURL is the Events API's base URL.
const DefaultPagerDutyURL = "https://events.pagerduty.com"

func newPagerDuty(c Config) *PagerDuty {
	base := strings.TrimRight(c.URL, "/")
	if base == "" {
		base = DefaultPagerDutyURL
	}
	cl := pagerduty.NewClient("", pagerduty.WithV2EventsAPIEndpoint(base))
	cl.HTTPClient = c.Client
	return &PagerDuty{c: cl, routingKey: strings.TrimSpace(c.Key)}
}

// Name is "pagerduty".
func (p *PagerDuty) Name() string { return "pagerduty" }

// Trigger implements Pager: event_action trigger, the evidence as
// custom_details, the report as a link.
func (p *PagerDuty) Trigger(ctx context.Context, inc Incident) error {
	if err := checkIncident(inc); err != nil {
		return err
	}
	at := inc.At
	if at.IsZero() {
		at = time.Now()
	}
	ev := &pagerduty.V2Event{RoutingKey: p.routingKey, Action: "trigger", DedupKey: inc.Key, Client: "kubecrew",
		Payload: &pagerduty.V2Payload{Summary: clip(inc.Summary, 1024), Source: nonEmpty(inc.Source, "kubecrew"),
			Severity: inc.Severity, Timestamp: at.UTC().Format(time.RFC3339), Component: inc.Component,
			Group: inc.Group, Class: inc.Class}}
	if len(inc.Details) > 0 {
		ev.Payload.Details = inc.Details
	}
	if inc.Link != "" {
		ev.ClientURL = inc.Link
		ev.Links = []any{map[string]string{"href": inc.Link, "text": "kubecrew report"}}
	}
	return p.send(ctx, ev)
}

// Resolve implements Pager: event_action resolve for the dedup_key.
func (p *PagerDuty) Resolve(ctx context.Context, key, _ string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("incident key %q: want 1 to %d characters", key, MaxKey)
	}
	return p.send(ctx, &pagerduty.V2Event{RoutingKey: p.routingKey, Action: "resolve", DedupKey: key})
}

func (p *PagerDuty) send(ctx context.Context, ev *pagerduty.V2Event) error {
	resp, err := p.c.ManageEventWithContext(ctx, ev)
	if err != nil {
		return fmt.Errorf("pagerduty %s %s: %w", ev.Action, ev.DedupKey, err)
	}
	if resp.Status != "success" {
		return fmt.Errorf("pagerduty %s %s: status %q: %s %s", ev.Action, ev.DedupKey, resp.Status, resp.Message, strings.Join(resp.Errors, "; "))
	}
	return nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

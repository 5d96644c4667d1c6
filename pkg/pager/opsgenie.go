package pager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Opsgenie creates and closes alerts through Opsgenie's Alert API:
// POST {base}/v2/alerts with the alias as the correlation key, and
// POST {base}/v2/alerts/{alias}/close?identifierType=alias, both with
// "Authorization: GenieKey <key>"; both are asynchronous and answer 202.
// Written against the API rather than through Opsgenie's Go SDK, which
// brings its own logger and retrying HTTP client for two POSTs.
type Opsgenie struct {
	base, key string
	client    *http.Client
}

var _ Pager = (*Opsgenie)(nil)

// DefaultOpsgenieURL is the Alert API's base URL (api.eu.opsgenie.com in
// the EU).
const DefaultOpsgenieURL = "https://api.opsgenie.com"

func newOpsgenie(c Config) *Opsgenie {
	base := strings.TrimRight(c.URL, "/")
	if base == "" {
		base = DefaultOpsgenieURL
	}
	return &Opsgenie{base: base, key: strings.TrimSpace(c.Key), client: c.Client}
}

// Name is "opsgenie".
func (o *Opsgenie) Name() string { return "opsgenie" }

// opsgenieAlert is the create-alert body (message ≤ 130, alias ≤ 512,
// description ≤ 15,000 characters).
type opsgenieAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	Tags        []string          `json:"tags,omitempty"`
}

// priorities maps a severity to Opsgenie's P1–P5.
var priorities = map[string]string{SeverityCritical: "P1", SeverityError: "P2", SeverityWarning: "P3", SeverityInfo: "P5"}

// Trigger implements Pager.
func (o *Opsgenie) Trigger(ctx context.Context, inc Incident) error {
	if err := checkIncident(inc); err != nil {
		return err
	}
	desc := inc.Summary
	if inc.Link != "" {
		desc += "\n\nReport: " + inc.Link
	}
	details := map[string]string{}
	for k, v := range inc.Details {
		details[k] = v
	}
	if inc.Link != "" {
		details["report"] = inc.Link
	}
	var tags []string
	for _, t := range []string{inc.Component, inc.Group, inc.Class} {
		if t != "" {
			tags = append(tags, t)
		}
	}
	return o.post(ctx, "/v2/alerts", opsgenieAlert{Message: clip(inc.Summary, 130), Alias: inc.Key, Description: clip(desc, 15000),
		Details: details, Entity: inc.Source, Source: "kubecrew", Priority: priorities[inc.Severity], Tags: tags}, "create "+inc.Key)
}

// Resolve implements Pager: closes the alert by its alias.
func (o *Opsgenie) Resolve(ctx context.Context, key, note string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("incident key %q: want 1 to %d characters", key, MaxKey)
	}
	body := map[string]string{"source": "kubecrew", "user": "kubecrew", "note": clip(note, 25000)}
	return o.post(ctx, "/v2/alerts/"+url.PathEscape(key)+"/close?identifierType=alias", body, "close "+key)
}

func (o *Opsgenie) post(ctx context.Context, path string, body any, what string) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("opsgenie %s: %w", what, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "GenieKey "+o.key)
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("opsgenie %s: %w", what, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("opsgenie %s: HTTP %d: %s", what, resp.StatusCode, clip(strings.TrimSpace(string(rb)), 300))
	}
	var ack struct {
		Result    string `json:"result"`
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal(rb, &ack); err != nil || ack.RequestID == "" {
		return fmt.Errorf("opsgenie %s: HTTP %d but not an Alert API answer (no requestId): %s", what, resp.StatusCode, clip(string(rb), 300))
	}
	return nil
}

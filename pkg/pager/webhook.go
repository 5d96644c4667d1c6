package pager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Webhook posts one JSON document per trigger and per resolve to any
// endpoint (an on-call tool's generic inbound hook, an automation). Any
// 2xx is taken.
type Webhook struct {
	url    string
	client *http.Client
}

var _ Pager = (*Webhook)(nil)

// WebhookEvent is the webhook's body.
type WebhookEvent struct {
	Source   string            `json:"source"` // always "kubecrew"
	Action   string            `json:"action"` // trigger|resolve
	Key      string            `json:"key"`
	Summary  string            `json:"summary,omitempty"`
	Severity string            `json:"severity,omitempty"`
	Object   string            `json:"object,omitempty"`
	Details  map[string]string `json:"details,omitempty"`
	Link     string            `json:"link,omitempty"`
	Note     string            `json:"note,omitempty"`
	At       time.Time         `json:"at"`
}

// Name is "webhook".
func (w *Webhook) Name() string { return "webhook" }

// Trigger implements Pager.
func (w *Webhook) Trigger(ctx context.Context, inc Incident) error {
	if err := checkIncident(inc); err != nil {
		return err
	}
	at := inc.At
	if at.IsZero() {
		at = time.Now()
	}
	return w.post(ctx, WebhookEvent{Source: "kubecrew", Action: "trigger", Key: inc.Key, Summary: inc.Summary,
		Severity: inc.Severity, Object: inc.Source, Details: inc.Details, Link: inc.Link, At: at.UTC()})
}

// Resolve implements Pager.
func (w *Webhook) Resolve(ctx context.Context, key, note string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("incident key %q: want 1 to %d characters", key, MaxKey)
	}
	return w.post(ctx, WebhookEvent{Source: "kubecrew", Action: "resolve", Key: key, Note: note, At: time.Now().UTC()})
}

func (w *Webhook) post(ctx context.Context, ev WebhookEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("page webhook %s %s: %w", ev.Action, ev.Key, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("page webhook %s %s: %w", ev.Action, ev.Key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("page webhook %s %s: HTTP %d: %s", ev.Action, ev.Key, resp.StatusCode, clip(strings.TrimSpace(string(rb)), 300))
	}
	return nil
}

package report

import (
	"context"
	"net/http"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// JSONWebhook posts one JSON document per report to any endpoint (Teams
// and Mattermost bridges, an automation). "text" and "username" make it
// readable by Mattermost-style webhooks as it is; the structured fields
// carry the findings for machines.
type JSONWebhook struct{ w webhook }

var _ Target = (*JSONWebhook)(nil)

// NewJSONWebhook builds the target; client nil means a default with a
// timeout.
func NewJSONWebhook(webhookURL string, client *http.Client) (*JSONWebhook, error) {
	w, err := newWebhook("webhook", webhookURL, client)
	if err != nil {
		return nil, err
	}
	return &JSONWebhook{w: w}, nil
}

// Name is "webhook".
func (j *JSONWebhook) Name() string { return "webhook" }

// JSONReport is the generic webhook's body.
type JSONReport struct {
	Agent    string        `json:"agent"`
	Username string        `json:"username"`
	Color    string        `json:"color"`
	Task     string        `json:"task"`
	Title    string        `json:"title"`
	Text     string        `json:"text"`
	Lines    []string      `json:"lines"`
	Findings []api.Finding `json:"findings"`
	BodyHash string        `json:"body_hash"`
	// Thread groups a report and its follow-ups (an investigation and
	// its alert's resolution); "" when the report starts none.
	Thread string `json:"thread,omitempty"`
}

// Send posts the whole report as one document.
func (j *JSONWebhook) Send(ctx context.Context, m Message) (int, error) {
	fs := m.Findings
	if fs == nil {
		fs = []api.Finding{}
	}
	doc := JSONReport{
		Agent: m.Sender.Agent, Username: m.Sender.Name, Color: m.Sender.Hex(), Task: m.Task,
		Title: m.Title, Text: m.Body(), Lines: m.Lines, Findings: fs, BodyHash: m.Hash(), Thread: m.Thread,
	}
	if err := j.w.post(ctx, doc); err != nil {
		return 0, err
	}
	return 1, nil
}

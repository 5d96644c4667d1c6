package report

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// SlackTextMax bounds one Slack message's text (Slack truncates long
// messages; 3,000 is the section block limit and reads well).
const SlackTextMax = 3000

// Slack posts to an incoming webhook. Incoming webhooks of Slack apps ignore
// a username override, so the persona's name leads the text too.
type Slack struct{ w webhook }

var _ Target = (*Slack)(nil)

// NewSlack builds the target; client nil means a default with a timeout.
func NewSlack(webhookURL string, client *http.Client) (*Slack, error) {
	w, err := newWebhook("slack", webhookURL, client)
	if err != nil {
		return nil, err
	}
	return &Slack{w: w}, nil
}

// Name is "slack".
func (s *Slack) Name() string { return "slack" }

type slackPayload struct {
	Text     string `json:"text"`
	Username string `json:"username,omitempty"`
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Send posts one message per chunk; the first is headed by the sender and
// the title.
func (s *Slack) Send(ctx context.Context, m Message) (int, error) {
	head := "*" + slackEscape.Replace(m.Sender.Name) + "*"
	if m.Title != "" {
		head += " · *" + slackEscape.Replace(m.Title) + "*"
	}
	lines := make([]string, len(m.Lines))
	for i, l := range m.Lines {
		lines[i] = slackEscape.Replace(l)
	}
	chunks := Chunks(lines, SlackTextMax-RuneLen(head)-1, RuneLen)
	for i, c := range chunks {
		text := c
		if i == 0 {
			text = head + "\n" + c
		}
		if err := s.w.post(ctx, slackPayload{Text: text, Username: m.Sender.Name}); err != nil {
			return i, fmt.Errorf("message %d of %d: %w", i+1, len(chunks), err)
		}
	}
	return len(chunks), nil
}

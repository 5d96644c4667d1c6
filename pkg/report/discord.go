package report

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Discord limits this target works within.
const (
	DiscordDescriptionMax = 4096 // embed description, in UTF-16 units
	discordTitleMax       = 256
	discordUsernameMax    = 80
)

// Discord posts to a channel webhook: each message carries the persona's
// name as its username (so the sender shows the persona, not the shared
// bot) and one embed in the persona's colour. A long report is split into
// several messages, most severe findings in the first.
//
// In a forum channel (NewDiscordForum) each report starts a thread (a
// forum post named after the report's title) and a follow-up goes into it.
type Discord struct {
	w     webhook
	forum bool
}

var _ ThreadTarget = (*Discord)(nil)

var _ Target = (*Discord)(nil)

// NewDiscord builds the target; client nil means a default with a timeout.
func NewDiscord(webhookURL string, client *http.Client) (*Discord, error) {
	w, err := newWebhook("discord", webhookURL, client)
	if err != nil {
		return nil, err
	}
	return &Discord{w: w}, nil
}

// NewDiscordForum builds the target for a forum channel's webhook: every
// report opens a thread, follow-ups reply in it.
func NewDiscordForum(webhookURL string, client *http.Client) (*Discord, error) {
	d, err := NewDiscord(webhookURL, client)
	if err != nil {
		return nil, err
	}
	d.forum = true
	return d, nil
}

// Name is "discord".
func (d *Discord) Name() string { return "discord" }

type discordPayload struct {
	Username        string          `json:"username,omitempty"`
	ThreadName      string          `json:"thread_name,omitempty"`
	Embeds          []discordEmbed  `json:"embeds"`
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

type discordEmbed struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	Color       int    `json:"color"`
}

// discordMentions with an empty parse list: text from a model or a cluster
// can never ping @everyone or a role.
type discordMentions struct {
	Parse []string `json:"parse"`
}

// Send posts one message per description chunk.
func (d *Discord) Send(ctx context.Context, m Message) (int, error) {
	n, _, err := d.SendThread(ctx, m)
	return n, err
}

// discordMessage is the part of Discord's answer to ?wait=true we read.
type discordMessage struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
}

// SendThread posts like Send; in a forum channel the first message opens a
// thread named after the title (m.Thread "") or goes into m.Thread, and the
// rest follow it there. It returns the thread's id ("" outside a forum).
func (d *Discord) SendThread(ctx context.Context, m Message) (int, string, error) {
	chunks := Chunks(m.Lines, DiscordDescriptionMax, UTF16Len)
	thread := ""
	if d.forum {
		thread = m.Thread
	}
	for i, c := range chunks {
		title := m.Title
		if len(chunks) > 1 {
			title = fmt.Sprintf("%s (%d/%d)", title, i+1, len(chunks))
		}
		p := discordPayload{
			Username:        safetext.Clean(m.Sender.Name, discordUsernameMax),
			Embeds:          []discordEmbed{{Title: safetext.Clean(title, discordTitleMax), Description: c, Color: m.Sender.Color}},
			AllowedMentions: discordMentions{Parse: []string{}},
		}
		if !d.forum {
			if err := d.w.post(ctx, p); err != nil {
				return i, "", fmt.Errorf("message %d of %d: %w", i+1, len(chunks), err)
			}
			continue
		}
		q := url.Values{"wait": {"true"}}
		if thread != "" {
			q.Set("thread_id", thread)
		} else {
			p.ThreadName = safetext.Clean(m.Title, 100)
			if p.ThreadName == "" {
				p.ThreadName = "kubecrew report"
			}
		}
		var got discordMessage
		if err := d.w.postQuery(ctx, q, p, &got); err != nil {
			return i, thread, fmt.Errorf("message %d of %d: %w", i+1, len(chunks), err)
		}
		if thread == "" {
			thread = got.ChannelID // a forum post's channel is its thread
		}
	}
	return len(chunks), thread, nil
}

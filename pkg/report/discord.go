package report

import (
	"context"
	"fmt"
	"net/http"

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
type Discord struct{ w webhook }

var _ Target = (*Discord)(nil)

// NewDiscord builds the target; client nil means a default with a timeout.
func NewDiscord(webhookURL string, client *http.Client) (*Discord, error) {
	w, err := newWebhook("discord", webhookURL, client)
	if err != nil {
		return nil, err
	}
	return &Discord{w: w}, nil
}

// Name is "discord".
func (d *Discord) Name() string { return "discord" }

type discordPayload struct {
	Username        string          `json:"username,omitempty"`
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
	chunks := Chunks(m.Lines, DiscordDescriptionMax, UTF16Len)
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
		if err := d.w.post(ctx, p); err != nil {
			return i, fmt.Errorf("message %d of %d: %w", i+1, len(chunks), err)
		}
	}
	return len(chunks), nil
}

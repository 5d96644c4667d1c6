package app

import (
	"fmt"
	"time"

	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/chain"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
	"github.com/kubecrew/kubecrew/services/core/internal/notify"
)

// notifyStore is what the notifier needs of the core's store: the
// investigations and alert states, and the post stamps (the fall-open
// Switch and both stores have them).
type notifyStore interface {
	notify.Store
	store.Deliveries
}

// newNotifier builds the chat posting of investigations from the webhook
// settings (docs/MANUAL.md, "The core tells people"); without any it posts
// nothing. A bad webhook URL fails start-up naming the setting.
func (a *App) newNotifier() (*notify.Notifier, error) {
	o := notify.Options{
		Routes: a.routes, Settle: a.cfg.NotifySettle, PublicURL: a.cfg.PublicURL,
		Now: a.d.Now, Log: a.d.Log.Named("notify"), Registry: a.d.Registerer,
		Chain:   chain.Follower{Reader: a.client, Resolve: config.ResolveAgent, Timeout: 10 * time.Second},
		Retry:   a.d.NotifyRetry,
		Poll:    a.d.NotifyPoll,
		Targets: map[string]notify.Deliverer{},
	}
	if a.cfg.DiscordWebhookURL == "" && a.cfg.SlackWebhookURL == "" && a.cfg.ReportWebhookURL == "" {
		return notify.New(o), nil
	}
	st, ok := a.d.Store.(notifyStore)
	if !ok {
		return nil, fmt.Errorf("chat webhooks are set but the store %s keeps no delivery stamps", a.d.Store.Kind())
	}
	o.Store = st
	targets, err := report.TargetsFromURLs(a.cfg.DiscordWebhookURL, a.cfg.SlackWebhookURL, a.cfg.ReportWebhookURL, nil)
	if err != nil {
		return nil, err
	}
	if a.cfg.DiscordForum {
		for i, t := range targets {
			if t.Name() == "discord" {
				if targets[i], err = report.NewDiscordForum(a.cfg.DiscordWebhookURL, nil); err != nil {
					return nil, fmt.Errorf("DISCORD_WEBHOOK_URL: %w", err)
				}
			}
		}
	}
	m := report.NewMetrics(a.d.Registerer)
	for _, t := range targets {
		d, err := report.NewDeliverer(report.Options{Sender: notify.Sender, Targets: []report.Target{t}, Stamps: st,
			Now: a.d.Now, Log: a.d.Log.Named("notify"), Metrics: m})
		if err != nil {
			return nil, err
		}
		o.Targets[t.Name()] = d
	}
	return notify.New(o), nil
}

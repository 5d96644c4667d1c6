// Package notify tells people (docs/MANUAL.md, "The core tells people"): each
// finished investigation is posted once to the chats its route names —
// the findings by severity with their lifecycle, what was done, the
// review, what waits for a human — and a resolved alert gets a short
// follow-up in the same thread where the chat has threads. A delivery is
// retried; its stamp is written only after the chat took it, and a
// stamped post is never posted again.
package notify

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
	"github.com/kubecrew/kubecrew/services/core/internal/chain"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
)

// Sender is who the core's posts are from.
var Sender = report.Sender{Agent: "core", Name: "kubecrew", Color: 0xE67E22}

// Deliverer posts a report to one chat (*report.Deliverer with one target).
type Deliverer interface {
	Deliver(ctx context.Context, task string, r report.Report, o report.DeliverOptions) []report.Outcome
}

// Store is what the notifier reads: the post stamps (written by the
// Deliverers) and the alert's last investigation.
type Store interface {
	LastDelivery(ctx context.Context, agent, task, target string) (store.DeliveryStamp, error)
	GetAlertState(ctx context.Context, fingerprint string) (store.AlertState, error)
	GetInvestigation(ctx context.Context, id string) (store.Investigation, error)
}

// Options configure a Notifier.
type Options struct {
	// Targets are the configured chats by name (discord, slack, webhook).
	Targets map[string]Deliverer
	Routes  *route.Routes
	Store   Store
	// Chain reads the investigation's chain of runs (Reader nil: the post
	// has the triage run's result only).
	Chain chain.Follower
	// Settle bounds the wait for the chain to end (NOTIFY_SETTLE); Poll is
	// how often it is read meanwhile (0: 2s).
	Settle, Poll time.Duration
	// Retry are the waits between delivery attempts (nil: 5s, 30s, 2m,
	// 10m); after the last the post is given up and logged.
	Retry []time.Duration
	// PublicURL is CORE_PUBLIC_URL: posts link the investigation's page.
	PublicURL string
	Now       func() time.Time
	Log       *zap.Logger
	Registry  prometheus.Registerer
}

// Notifier posts investigations in the background.
type Notifier struct {
	o      Options
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	posts  *prometheus.CounterVec
}

// New returns a Notifier; with no targets it posts nothing.
func New(o Options) *Notifier {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Retry == nil {
		o.Retry = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}
	}
	n := &Notifier{o: o, posts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubecrew_core_notifications_total",
		Help: "Investigation posts and resolved follow-ups by target and outcome (posted, already_posted, failed, given_up).",
	}, []string{"target", "outcome"})}
	if o.Registry != nil {
		if err := o.Registry.Register(n.posts); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				n.posts = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
	}
	for name := range o.Targets {
		for _, oc := range []string{"posted", "already_posted", "failed", "given_up"} {
			n.posts.WithLabelValues(name, oc)
		}
	}
	n.base, n.cancel = context.WithCancel(context.Background())
	return n
}

// Investigated posts a finished investigation in the background.
func (n *Notifier) Investigated(inv store.Investigation, res kapi.RunResult) {
	if len(n.o.Targets) == 0 {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.investigated(n.base, inv, res)
	}()
}

func (n *Notifier) investigated(ctx context.Context, inv store.Investigation, res kapi.RunResult) {
	labels := alertLabels(inv.Alert)
	targets := n.targetsFor(labels)
	log := n.o.Log.With(zap.String("investigation_id", inv.ID), zap.String("alertname", inv.Alertname))
	if len(targets) == 0 {
		log.Debug("investigation not posted: its route posts to no configured chat")
		return
	}
	p := Post{Inv: inv, Result: res, Labels: labels, Runs: n.settle(ctx, inv)}
	if n.o.PublicURL != "" {
		p.Link = n.o.PublicURL + "/api/v1/investigations/" + inv.ID + "/report"
	}
	rep := p.Report()
	task := "investigation/" + inv.ID
	for _, name := range targets {
		thread := ""
		if name == "webhook" {
			thread = task // the generic webhook's receivers group by it
		}
		n.deliver(ctx, log, name, task, rep, thread)
	}
}

// settle reads the chain until every run ended or Settle passed, and
// returns the last reading (nil without a reader).
func (n *Notifier) settle(ctx context.Context, inv store.Investigation) []tracereport.Run {
	if n.o.Chain.Reader == nil || inv.RunID == "" {
		return nil
	}
	first := tracereport.Link{Agent: inv.Agent, RunID: inv.RunID}
	deadline := n.o.Now().Add(n.o.Settle)
	for {
		runs := n.o.Chain.Follow(ctx, first)
		if chain.Settled(runs) || !n.o.Now().Before(deadline) {
			return runs
		}
		select {
		case <-ctx.Done():
			return runs
		case <-time.After(n.o.Poll):
		}
	}
}

// targetsFor lists the configured chats the alert's route posts to.
func (n *Notifier) targetsFor(labels map[string]string) []string {
	t := n.o.Routes.Match(labels)
	var out []string
	for _, name := range route.NotifyTargets {
		if _, ok := n.o.Targets[name]; ok && t.Posts(name) {
			out = append(out, name)
		}
	}
	return out
}

// postedOnce: any stamp of the task at all means it was posted (the body
// may differ on a retry — the chain moved on — and must not post again).
var postedOnce = time.Unix(1, 0)

// deliver posts rep to one chat under task, retrying on failure.
func (n *Notifier) deliver(ctx context.Context, log *zap.Logger, name, task string, rep report.Report, thread string) {
	log = log.With(zap.String("target", name), zap.String("task", task))
	d := n.o.Targets[name]
	for attempt := 0; ; attempt++ {
		ocs := d.Deliver(ctx, task, rep, report.DeliverOptions{PostedSince: postedOnce, Thread: thread})
		status := report.StatusFailed
		if len(ocs) > 0 {
			status = ocs[0].Status
		}
		switch {
		case status == report.StatusPosted || status == report.StatusDuplicate:
			n.posts.WithLabelValues(name, "already_posted").Inc()
			return
		case status != report.StatusFailed:
			n.posts.WithLabelValues(name, "posted").Inc()
			log.Info("posted to chat", zap.Int("attempt", attempt+1))
			return
		}
		n.posts.WithLabelValues(name, "failed").Inc()
		if attempt >= len(n.o.Retry) || ctx.Err() != nil {
			n.posts.WithLabelValues(name, "given_up").Inc()
			log.Error("chat post given up after every retry", zap.Int("attempts", attempt+1))
			return
		}
		select {
		case <-ctx.Done():
			n.posts.WithLabelValues(name, "given_up").Inc()
			log.Warn("chat post cut short by shutdown; not stamped", zap.Int("attempts", attempt+1))
			return
		case <-time.After(n.o.Retry[attempt]):
		}
	}
}

// Resolved posts, in the background, the follow-up of a resolved alert to
// every chat its investigation was posted to, in the same thread.
func (n *Notifier) Resolved(fingerprint string) {
	if len(n.o.Targets) == 0 {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.resolved(n.base, fingerprint)
	}()
}

func (n *Notifier) resolved(ctx context.Context, fingerprint string) {
	st, err := n.o.Store.GetAlertState(ctx, fingerprint)
	if err != nil || st.InvestigationID == "" {
		return
	}
	inv, err := n.o.Store.GetInvestigation(ctx, st.InvestigationID)
	if err != nil {
		return
	}
	labels := alertLabels(inv.Alert)
	log := n.o.Log.With(zap.String("investigation_id", inv.ID), zap.String("alertname", inv.Alertname))
	rep := followUp(inv, labels, n.o.Now().UTC().Format("2006-01-02 15:04 MST"))
	for _, name := range n.targetsFor(labels) {
		stamp, err := n.o.Store.LastDelivery(ctx, Sender.Agent, "investigation/"+inv.ID, name)
		if err != nil {
			continue // never posted there: nothing to follow up
		}
		n.deliver(ctx, log, name, "resolved/"+inv.ID, rep, stamp.Thread)
	}
}

// Close waits for the posts in flight until ctx ends, then cuts them short
// (a cut post is not stamped).
func (n *Notifier) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-done
		return errors.New("chat posts cut short by shutdown")
	}
}

// Wait blocks until no post is in flight (tests).
func (n *Notifier) Wait() { n.wg.Wait() }

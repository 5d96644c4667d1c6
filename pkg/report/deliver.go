package report

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Delivery statuses, per target.
const (
	StatusDelivered = "delivered" // every message posted; stamped
	StatusPartial   = "partial"   // some messages posted; stamped (counts as delivered)
	StatusDuplicate = "duplicate" // identical to the last post for this task: not re-posted
	StatusPosted    = "already_posted"
	StatusFailed    = "failed" // nothing posted; not stamped, so the next attempt retries
	StatusEmpty     = "empty"  // nothing to post
)

// Outcome is what happened at one target.
type Outcome struct {
	Target   string `json:"target"`
	Status   string `json:"status"`
	Messages int    `json:"messages,omitempty"`
	Error    string `json:"error,omitempty"`
	// Thread is the thread the post went to or started ("" for none).
	Thread string `json:"thread,omitempty"`
}

// Delivered reports whether the target has the report now.
func (o Outcome) Delivered() bool { return o.Status == StatusDelivered || o.Status == StatusPartial }

// Deliverer posts reports to every configured target with dedupe: an
// identical body to the last one posted for the same task is not posted
// again, and the stamp that records a post is written only after the post
// succeeded (a pre-emptive stamp would suppress the retry and lose a
// standing problem for good). A failure is logged, without the webhook URL,
// and returned as an outcome; it is never an error of the caller.
type Deliverer struct {
	sender  Sender
	targets []Target
	stamps  store.Deliveries
	now     func() time.Time
	log     *zap.Logger
	metrics *Metrics
}

// Options are the deliverer's dependencies.
type Options struct {
	Sender  Sender
	Targets []Target
	Stamps  store.Deliveries
	Now     func() time.Time
	Log     *zap.Logger
	Metrics *Metrics
}

// NewDeliverer builds a deliverer. Without targets it posts nothing.
func NewDeliverer(o Options) (*Deliverer, error) {
	if o.Stamps == nil {
		return nil, errors.New("report: a delivery stamp store is required")
	}
	if o.Sender.Agent == "" {
		return nil, errors.New("report: the sender's agent slug is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	for _, t := range o.Targets { // every target's series from the start, at 0
		for _, s := range []string{StatusDelivered, StatusPartial, StatusDuplicate, StatusPosted, StatusFailed, StatusEmpty} {
			o.Metrics.deliveries.WithLabelValues(t.Name(), s)
		}
	}
	return &Deliverer{sender: o.Sender, targets: o.Targets, stamps: o.Stamps, now: o.Now, log: o.Log, metrics: o.Metrics}, nil
}

// TargetsFromURLs builds the targets whose URL is set (DISCORD_WEBHOOK_URL,
// SLACK_WEBHOOK_URL, REPORT_WEBHOOK_URL).
func TargetsFromURLs(discord, slack, generic string, client *http.Client) ([]Target, error) {
	var out []Target
	if discord != "" {
		t, err := NewDiscord(discord, client)
		if err != nil {
			return nil, fmt.Errorf("DISCORD_WEBHOOK_URL: %w", err)
		}
		out = append(out, t)
	}
	if slack != "" {
		t, err := NewSlack(slack, client)
		if err != nil {
			return nil, fmt.Errorf("SLACK_WEBHOOK_URL: %w", err)
		}
		out = append(out, t)
	}
	if generic != "" {
		t, err := NewJSONWebhook(generic, client)
		if err != nil {
			return nil, fmt.Errorf("REPORT_WEBHOOK_URL: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Sender returns who the reports are from.
func (d *Deliverer) Sender() Sender { return d.sender }

// Targets returns the names of the configured targets.
func (d *Deliverer) Targets() []string {
	out := make([]string, len(d.targets))
	for i, t := range d.targets {
		out[i] = t.Name()
	}
	return out
}

// DeliverOptions refine one delivery.
type DeliverOptions struct {
	// PostedSince, when set, skips a target that was already posted to for
	// this task at or after that time (the agent called post_report during
	// the run that started then).
	PostedSince time.Time
	// TouchDuplicate re-stamps a target that already has this exact body
	// (same hash, new time), so the pulse after a post_report call that
	// found nothing new knows the run handled the report.
	TouchDuplicate bool
	// Thread is the thread the report belongs to (Message.Thread); when
	// ThreadOf is set it gives each target's own thread id instead.
	Thread   string
	ThreadOf func(target string) string
}

// Decision is the pure dedupe decision for one target.
type Decision string

// Dedupe decisions.
const (
	Post            Decision = "post"
	SkipDuplicate   Decision = StatusDuplicate
	SkipPostedInRun Decision = StatusPosted
)

// Decide says whether to post a body with hash to a target whose last
// stamp is last (found false: never posted).
func Decide(last store.DeliveryStamp, found bool, hash string, postedSince time.Time) Decision {
	if !found {
		return Post
	}
	if !postedSince.IsZero() && !last.At.Before(postedSince.Truncate(time.Microsecond)) {
		return SkipPostedInRun
	}
	if last.BodyHash == hash {
		return SkipDuplicate
	}
	return Post
}

// Deliver posts r for task (the dedupe key) to every target and returns
// one outcome per target.
func (d *Deliverer) Deliver(ctx context.Context, task string, r Report, o DeliverOptions) []Outcome {
	rendered := Render(r)
	out := make([]Outcome, 0, len(d.targets))
	if rendered.Empty() {
		for _, t := range d.targets {
			out = append(out, Outcome{Target: t.Name(), Status: StatusEmpty})
		}
		return out
	}
	hash := rendered.Hash()
	for _, t := range d.targets {
		msg := Message{Sender: d.sender, Task: task, Rendered: rendered, Thread: o.Thread}
		if o.ThreadOf != nil {
			msg.Thread = o.ThreadOf(t.Name())
		}
		oc := d.deliverOne(ctx, t, msg, hash, o)
		d.metrics.deliveries.WithLabelValues(t.Name(), oc.Status).Inc()
		out = append(out, oc)
	}
	return out
}

func (d *Deliverer) deliverOne(ctx context.Context, t Target, msg Message, hash string, o DeliverOptions) Outcome {
	log := d.log.With(zap.String("target", t.Name()), zap.String("task", msg.Task), zap.String("body_hash", hash))
	last, err := d.stamps.LastDelivery(ctx, d.sender.Agent, msg.Task, t.Name())
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// Without the stamp we cannot dedupe; a repeated post beats a lost one.
		log.Warn("delivery stamp unreadable; posting without dedupe", zap.Error(err))
	}
	switch Decide(last, found, hash, o.PostedSince) {
	case SkipDuplicate:
		log.Debug("report identical to the last post; not re-posted")
		if o.TouchDuplicate {
			last.At = d.now()
			if err := d.stamps.StampDelivery(context.WithoutCancel(ctx), last); err != nil {
				log.Warn("dedupe stamp not refreshed", zap.Error(err))
			}
		}
		return Outcome{Target: t.Name(), Status: StatusDuplicate}
	case SkipPostedInRun:
		log.Debug("the run already posted this task's report")
		return Outcome{Target: t.Name(), Status: StatusPosted}
	}
	var sent int
	thread := msg.Thread
	if tt, ok := t.(ThreadTarget); ok {
		var started string
		sent, started, err = tt.SendThread(ctx, msg)
		if started != "" {
			thread = started
		}
	} else {
		sent, err = t.Send(ctx, msg)
	}
	oc := Outcome{Target: t.Name(), Messages: sent, Status: StatusDelivered, Thread: thread}
	if err != nil {
		oc.Error = err.Error()
		oc.Status = StatusFailed
		if sent > 0 {
			oc.Status = StatusPartial
		}
		log.Warn("report delivery failed", zap.String("status", oc.Status), zap.Int("messages_sent", sent), zap.String("error", oc.Error))
	}
	if sent > 0 {
		stamp := store.DeliveryStamp{Agent: d.sender.Agent, Task: msg.Task, Target: t.Name(), BodyHash: hash, At: d.now(), Thread: thread}
		if err := d.stamps.StampDelivery(context.WithoutCancel(ctx), stamp); err != nil {
			log.Warn("report delivered but the dedupe stamp was not saved; the next identical report will post again", zap.Error(err))
		}
		if oc.Status == StatusDelivered {
			log.Info("report delivered", zap.Int("messages", sent))
		}
	}
	return oc
}

// Metrics are the report metrics.
type Metrics struct {
	deliveries *prometheus.CounterVec
}

// NewMetrics registers kubecrew_report_deliveries_total{target,status} on
// reg (nil: unregistered); calling it twice with one registry shares the
// counter.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubecrew_report_deliveries_total",
		Help: "Report deliveries by target and status (delivered, partial, duplicate, already_posted, failed, empty).",
	}, []string{"target", "status"})}
	if reg != nil {
		m.deliveries = register(reg, m.deliveries)
	}
	return m
}

// register registers c, or returns the collector already registered under
// its name (two deliverers of one process share the counter).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic(fmt.Sprintf("report metrics: %v", err))
	}
	return c
}

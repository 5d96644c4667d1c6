// Package metrics holds the core's Prometheus metrics, registered on an
// injected registerer (nil: a private registry, so tests and several cores
// in one process never collide).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
)

const namespace, subsystem = "kubecrew", "core"

// Decisions lists every alert decision, so each series exists from the
// start (a rate over a series that appears late is wrong).
var Decisions = []string{"dispatched", "deduped", "cooldown", "busy", "ignored", "resolved", "rejected", "joined", "dropped"}

// Severities are the severity label values queue drops are counted by
// (any other value counts as "other", none as "none").
var Severities = []string{"critical", "error", "warning", "info", "none", "other"}

// Metrics are the core's metrics.
type Metrics struct {
	Decisions           *prometheus.CounterVec   // {decision}
	WebhookRequests     *prometheus.CounterVec   // {code}
	WebhookDuration     prometheus.Histogram     //
	WebhookAlerts       prometheus.Counter       //
	Investigations      *prometheus.CounterVec   // {agent, status}
	InvestigationTime   *prometheus.HistogramVec // {agent}
	InvestigationsDoing prometheus.Gauge         //
	StoreErrors         *prometheus.CounterVec   // {op}
	AgentRequests       *prometheus.CounterVec   // {agent, endpoint, outcome}
	QueueDropped        *prometheus.CounterVec   // {reason, severity}
	Queued              *prometheus.GaugeVec     // {agent}
}

// New creates and registers the metrics on reg (nil: a new registry).
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "alert_decisions_total",
			Help: "Alert decisions by decision (dispatched, deduped, cooldown, busy, ignored, resolved, rejected, joined, dropped).",
		}, []string{"decision"}),
		WebhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "webhook_requests_total",
			Help: "Alertmanager webhook requests by HTTP status code.",
		}, []string{"code"}),
		WebhookDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "webhook_duration_seconds",
			Help:    "Time to decide and answer one Alertmanager webhook.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		WebhookAlerts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "webhook_alerts_total",
			Help: "Alerts received in valid webhooks.",
		}),
		Investigations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "investigations_total",
			Help: "Finished alert investigations by agent and status (completed, partial, failed).",
		}, []string{"agent", "status"}),
		InvestigationTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "investigation_duration_seconds",
			Help:    "Wall time of alert investigations (the agent's /run call).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900},
		}, []string{"agent"}),
		InvestigationsDoing: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "investigations_in_flight",
			Help: "Alert investigations this core process is waiting on (calls to agents, not queued incidents).",
		}),
		QueueDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "queue_dropped_total",
			Help: "Incidents dropped from an agent's full busy queue, by reason and severity (the lowest severity goes first).",
		}, []string{"reason", "severity"}),
		Queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "queued_incidents",
			Help: "Incidents waiting in an agent's busy queue in this core process.",
		}, []string{"agent"}),
		StoreErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "store_errors_total",
			Help: "Store operations that failed, by operation.",
		}, []string{"op"}),
		AgentRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "agent_requests_total",
			Help: "Requests the core made to agents, by agent, endpoint and outcome (ok, error).",
		}, []string{"agent", "endpoint", "outcome"}),
	}
	reg.MustRegister(m.Decisions, m.WebhookRequests, m.WebhookDuration, m.WebhookAlerts, m.Investigations,
		m.InvestigationTime, m.InvestigationsDoing, m.StoreErrors, m.AgentRequests, m.QueueDropped, m.Queued)
	for _, d := range Decisions {
		m.Decisions.WithLabelValues(d)
	}
	for _, s := range Severities {
		m.QueueDropped.WithLabelValues("queue_full", s)
	}
	buildinfo.Register(reg, "core")
	return m
}

// InitAgents creates the per-agent series of the agents alerts go to, at 0,
// so a rate over them is right from the first investigation.
func (m *Metrics) InitAgents(slugs []string) {
	for _, a := range slugs {
		for _, s := range []string{"completed", "partial", "failed"} {
			m.Investigations.WithLabelValues(a, s)
		}
		for _, o := range []string{"ok", "error"} {
			m.AgentRequests.WithLabelValues(a, "run", o)
		}
		m.Queued.WithLabelValues(a)
	}
}

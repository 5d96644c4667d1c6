package a2aclient

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/pkg/a2a"
)

// Metrics are the agent's A2A metrics, shared by the outgoing side (this
// package) and the incoming one (internal/a2aserver): one counter of
// messages by direction.
type Metrics struct {
	Messages     *prometheus.CounterVec
	CallDuration *prometheus.HistogramVec
}

// NewMetrics registers the A2A metrics on reg (nil: not exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_a2a_messages_total",
			Help: "A2A messages sent and received, by verb and outcome (accepted, completed, partial, failed, canceled, refused, pending).",
		}, []string{"direction", "verb", "outcome"}),
		CallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubecrew_a2a_call_duration_seconds",
			Help:    "Duration of A2A calls this agent made, until the answer (ask, delegate) or the acceptance (notify).",
			Buckets: []float64{0.005, 0.05, 0.5, 5, 30, 60, 120, 300, 600},
		}, []string{"verb", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Messages, m.CallDuration)
	}
	// every known series from the start, at 0
	for _, v := range a2a.Verbs {
		for _, o := range []string{a2a.OutcomeAccepted, a2a.OutcomeRefused} {
			m.Messages.WithLabelValues(a2a.DirectionReceived, string(v), o)
		}
		for _, o := range []string{a2a.OutcomeAccepted, a2a.OutcomeCompleted, a2a.OutcomePartial, a2a.OutcomeFailed,
			a2a.OutcomeCanceled, a2a.OutcomeRefused, a2a.OutcomePending} {
			m.Messages.WithLabelValues(a2a.DirectionSent, string(v), o)
		}
	}
	return m
}

package engine

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// Metrics of the run engine. Label values are bounded: agent slugs,
// workflow types, statuses, tool names from the registry, outcomes.
type Metrics struct {
	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	modelRequests *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	guardDenials  *prometheus.CounterVec
	inFlight      prometheus.Gauge
	redactions    *prometheus.CounterVec
}

// NewMetrics registers the engine's metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_runs_total", Help: "Runs finished, by agent, workflow type and status.",
		}, []string{"agent", "workflow", "status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecrew_agent_run_duration_seconds", Help: "Run duration.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 180, 600, 1200, 2400},
		}, []string{"agent", "workflow"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_model_requests_total", Help: "Model requests by endpoint and outcome.",
		}, []string{"endpoint", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_model_tokens_total", Help: "Model tokens by kind (prompt|completion).",
		}, []string{"kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_tool_calls_total", Help: "Tool calls by tool and outcome.",
		}, []string{"tool", "outcome"}),
		guardDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_guard_denials_total", Help: "Tool calls refused by a safety gate (name|execution).",
		}, []string{"gate"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecrew_agent_runs_in_flight", Help: "Runs executing now.",
		}),
		redactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_redacted_values_total", Help: "Values redacted from tool output, by kind (jwt, secret-pair, …).",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.runDuration, m.modelRequests, m.tokens, m.toolCalls, m.guardDenials, m.inFlight, m.redactions)
	}
	return m
}

// ObserveModel counts one model request; it is the llm client's Observe hook.
func (m *Metrics) ObserveModel(endpoint, outcome string) {
	m.modelRequests.WithLabelValues(endpoint, outcome).Inc()
}

// redacted counts the values redaction replaced in one tool output.
func (m *Metrics) redacted(c redact.Counts) {
	for k, n := range c {
		m.redactions.WithLabelValues(string(k)).Add(float64(n))
	}
}

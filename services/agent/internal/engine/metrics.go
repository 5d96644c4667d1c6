package engine

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Metrics of the run engine. Label values are bounded: workflow types,
// statuses, tool names from the registry, outcomes. The agent label is the
// registerer's (every agent metric carries it; see app.New).
type Metrics struct {
	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	modelRequests *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	runTokens     *prometheus.HistogramVec
	// budgetRefusals counts model calls the token budget refused.
	budgetRefusals *prometheus.CounterVec
	// pulseUnchanged counts pulse runs that skipped the model: the same
	// problems as the last tick.
	pulseUnchanged prometheus.Counter
	toolCalls      *prometheus.CounterVec
	guardDenials   *prometheus.CounterVec
	inFlight       prometheus.Gauge
	redactions     *prometheus.CounterVec
	busy           *prometheus.CounterVec
}

// NewMetrics registers the engine's metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_runs_total", Help: "Runs finished, by workflow type and status.",
		}, []string{"workflow_type", "status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecrew_agent_run_duration_seconds", Help: "Run duration.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 180, 600, 1200, 2400},
		}, []string{"workflow_type"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_model_requests_total", Help: "Model requests by endpoint and outcome.",
		}, []string{"endpoint", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_model_tokens_total", Help: "Model tokens by kind (prompt|completion).",
		}, []string{"kind"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_model_calls_total", Help: "Model calls that answered, by workflow type and pass (loop|synthesis).",
		}, []string{"workflow_type", "pass"}),
		runTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecrew_agent_run_tokens", Help: "Model tokens (prompt + completion) of one run that called the model.",
			Buckets: prometheus.ExponentialBuckets(1000, 2, 10),
		}, []string{"workflow_type"}),
		budgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_token_budget_refusals_total", Help: "Model calls not made because the token budget would be crossed, by scope (day|run).",
		}, []string{"scope"}),
		pulseUnchanged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubecrew_agent_pulse_unchanged_total", Help: "Pulse runs that did not call the model: the problem set was the last tick's.",
		}),
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
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_agent_runs_busy_total", Help: "Runs refused because the agent was at capacity (capacity.go), by workflow type.",
		}, []string{"workflow_type"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.runDuration, m.modelRequests, m.tokens, m.modelCalls, m.runTokens, m.budgetRefusals, m.pulseUnchanged, m.toolCalls, m.guardDenials, m.inFlight, m.redactions, m.busy)
	}
	// Every known series exists from the start at 0: a rate over a series
	// that appears with its first event misses that event.
	for _, w := range api.Workflows {
		for _, s := range []string{api.StatusCompleted, api.StatusPartial, api.StatusFailed} {
			m.runs.WithLabelValues(w, s)
		}
		for _, p := range []string{passLoop, passSynthesis} {
			m.modelCalls.WithLabelValues(w, p)
		}
		m.busy.WithLabelValues(w)
	}
	for _, k := range []string{"prompt", "completion"} {
		m.tokens.WithLabelValues(k)
	}
	for _, sc := range []string{"day", "run"} {
		m.budgetRefusals.WithLabelValues(sc)
	}
	for _, g := range []string{"name", "execution"} {
		m.guardDenials.WithLabelValues(g)
	}
	return m
}

// toolOutcomes are the outcomes a tool call is counted under.
var toolOutcomes = []string{tools.OutcomeOK, tools.OutcomeError, tools.OutcomeDenied, tools.OutcomePanic}

// initTools creates the tool-call series of the tools a run may call, at 0.
func (m *Metrics) initTools(names []string) {
	for _, n := range names {
		for _, o := range toolOutcomes {
			m.toolCalls.WithLabelValues(n, o)
		}
	}
}

// InitModel creates the model-request series of the named endpoints at 0
// for the outcomes a healthy endpoint reports (ok) and the common
// failures; others appear when they first happen.
func (m *Metrics) InitModel(endpoints []string, outcomes []string) {
	for _, e := range endpoints {
		for _, o := range outcomes {
			m.modelRequests.WithLabelValues(e, o)
		}
	}
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

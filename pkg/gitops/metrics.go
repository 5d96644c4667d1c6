package gitops

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the GitOps metrics. A nil *Metrics records nothing.
type Metrics struct {
	stale  prometheus.Gauge
	opened prometheus.Counter
	merges *prometheus.CounterVec
}

// NewMetrics registers the GitOps metrics on reg (nil: unregistered):
//
//	kubecrew_gitops_stale_prs                 open agent PRs older than the stale threshold
//	kubecrew_gitops_prs_opened_total          agent PRs opened
//	kubecrew_gitops_merge_checks_total{result} merge_if_trivial outcomes: merged, refused, error
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		stale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecrew_gitops_stale_prs",
			Help: "Open agent PRs (agent/fix/ branches) older than the stale threshold: surfaced, not counted against the open-PR cap.",
		}),
		opened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubecrew_gitops_prs_opened_total",
			Help: "Agent PRs opened by bump_workload_memory.",
		}),
		merges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_gitops_merge_checks_total",
			Help: "merge_if_trivial outcomes: merged, refused (left for a human), error.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.stale, m.opened, m.merges)
	}
	for _, r := range []string{"merged", "refused", "error"} { // every result from the start, at 0
		m.merges.WithLabelValues(r)
	}
	return m
}

func (m *Metrics) setStale(n int) {
	if m != nil {
		m.stale.Set(float64(n))
	}
}

func (m *Metrics) prOpened() {
	if m != nil {
		m.opened.Inc()
	}
}

func (m *Metrics) mergeCheck(result string) {
	if m != nil {
		m.merges.WithLabelValues(result).Inc()
	}
}

// Package ok registers metrics the ways the fleet's binaries do
// (promqlcheck's scan test reads it; it is never built).
package ok

import "github.com/prometheus/client_golang/prometheus"

const namespace, subsystem = "kubecrew", "demo"

func register(reg prometheus.Registerer) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"agent": "noor"}, reg)
	reg.MustRegister(
		prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "decisions_total",
		}, []string{"decision"}),
		prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecrew_demo_duration_seconds",
		}, []string{"workflow_type"}),
		prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "kubecrew_demo_build_info",
			ConstLabels: prometheus.Labels{"version": "v1"},
		}),
		prometheus.NewSummary(prometheus.SummaryOpts{Name: "kubecrew_demo_latency_seconds"}),
	)
}

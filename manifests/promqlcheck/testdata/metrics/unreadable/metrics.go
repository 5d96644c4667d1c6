// Package unreadable registers a metric whose labels a source scan cannot
// know (promqlcheck's scan test: it must say so, not skip it).
package unreadable

import "github.com/prometheus/client_golang/prometheus"

var labelNames = []string{"op"}

var errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubecrew_demo_errors_total"}, labelNames)

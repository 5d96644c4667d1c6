// Package buildinfo says which build a binary is: the version stamped at
// build time, the VCS revision Go recorded, and the kubecrew_build_info
// metric both binaries export.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is set at build time:
// -ldflags "-X github.com/kubecrew/kubecrew/pkg/buildinfo.Version=v0.1.0"
// (the Makefile and the Dockerfile do).
var Version = "dev"

// Revision is the VCS commit Go stamped into the binary (with "-dirty" for
// a modified tree), or "unknown" (a -trimpath build outside git, go test).
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// Register adds kubecrew_build_info{binary, version, revision, goversion} 1
// to reg, the usual way to join a build to other series
// (`* on(pod) group_left(version) kubecrew_build_info`).
func Register(reg prometheus.Registerer, binary string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubecrew_build_info",
		Help: "Always 1; the labels say which build this process runs.",
		ConstLabels: prometheus.Labels{
			"binary": binary, "version": Version, "revision": Revision(), "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	reg.MustRegister(g)
}

package noor

import (
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube"
)

func TestProblemDigest(t *testing.T) {
	t.Parallel()
	p := func(sev, ns, kind, name, reason string) kube.Problem {
		return kube.Problem{Severity: sev, Namespace: ns, Kind: kind, Name: name, Reason: reason, Detail: "x", Restarts: 3, LastSeen: time.Unix(1, 0)}
	}
	rep := func(ps ...kube.Problem) *kube.ProblemReport {
		return &kube.ProblemReport{Problems: ps, Coverage: kube.Coverage{ChecksRun: []string{"pods", "events"}}}
	}
	oom, crash := p("critical", "shop", "Deployment", "api", "OOMKilled"), p("high", "shop", "Deployment", "web", "CrashLoopBackOff")
	base := ProblemDigest(rep(oom, crash))
	moved := oom
	moved.Restarts, moved.Detail, moved.Events, moved.LastSeen, moved.Pod = 40, "OOMKilled 41 times", 12, time.Unix(99, 0), "api-7d9-x"
	partial := rep(oom, crash)
	partial.Coverage.Partial = []kube.PartialList{{List: "events", Why: "forbidden"}}
	cases := []struct {
		name string
		rep  *kube.ProblemReport
		same bool
	}{
		{"the same set in another order", rep(crash, oom), true},
		{"counts, details and ages moved", rep(moved, crash), true},
		{"a problem gone", rep(oom), false},
		{"a problem more", rep(oom, crash, p("medium", "shop", "Deployment", "cart", "ImagePullBackOff")), false},
		{"a severity changed", rep(p("high", "shop", "Deployment", "api", "OOMKilled"), crash), false},
		{"a reason changed", rep(p("critical", "shop", "Deployment", "api", "CrashLoopBackOff"), crash), false},
		{"another owner", rep(p("critical", "shop", "StatefulSet", "api", "OOMKilled"), crash), false},
		{"a list could not be read", partial, false},
	}
	for _, tc := range cases {
		if got := ProblemDigest(tc.rep) == base; got != tc.same {
			t.Errorf("%s: same digest = %v, want %v", tc.name, got, tc.same)
		}
	}
}

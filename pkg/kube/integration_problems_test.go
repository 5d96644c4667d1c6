package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// TestIntegrationSemantics loads each hand-built cluster of semCases into
// its own namespace on the real API server (objects created, statuses
// written through their subresources) and expects the same problems as on
// the fake clientset: each new check and each kind of churn, on the wire.
func TestIntegrationSemantics(t *testing.T) {
	env := kubetest.Start(t)
	c := connect(t, env)
	for _, tc := range semCases {
		t.Run(tc.name, func(t *testing.T) {
			ns := uniqueName("sem")
			sfx := "-" + strings.TrimPrefix(ns, "sem-")
			h := newHand(ns, sfx, time.Now())
			tc.build(h)
			if err := kubetestLoad(context.Background(), env, h); err != nil {
				t.Fatal(err)
			}
			// a claim's creation time is the server's: judge Pending claims at once
			r, err := c.ClusterProblems(context.Background(), ProblemOptions{StuckAfter: -1})
			if err != nil {
				t.Fatal(err)
			}
			if got := semGot(r, ns, sfx); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n got %q\nwant %q\n%s", got, tc.want, r.Render())
			}
			if len(r.Coverage.Partial) != 0 {
				t.Errorf("partial: %+v", r.Coverage.Partial)
			}
		})
	}
}

// TestIntegrationNoRBACIsUnknown: the most common first-deploy mistake, a
// service account with no RBAC. Every List is forbidden; the sweep must
// say it checked nothing, first, and never "healthy".
func TestIntegrationNoRBACIsUnknown(t *testing.T) {
	env, ns := loadedFixtures(t)
	cs := env.Limited(t, nil)
	c := New(cs, WithLogger(zaptest.NewLogger(t)))
	for _, scope := range []string{"", ns} {
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: scope})
		if err != nil {
			t.Fatalf("scope %q: %v", scope, err)
		}
		out := r.Render()
		if r.Verdict() != VerdictUnknown || r.Healthy() || len(r.Problems) != 0 {
			t.Errorf("scope %q: verdict %s:\n%s", scope, r.Verdict(), out)
		}
		first := strings.SplitN(out, "\n", 2)[0]
		if !strings.HasPrefix(first, "VERDICT UNKNOWN: nothing could be checked") || !strings.Contains(first, `forbidden for User "testenv-limited": cronjobs, daemonsets, deployments, events`) {
			t.Errorf("scope %q: first line %q", scope, first)
		}
	}
}

// TestIntegrationMissingNamespace: an alert for a namespace that does not
// exist is answered "unknown: namespace ... does not exist", not healthy.
func TestIntegrationMissingNamespace(t *testing.T) {
	env := kubetest.Start(t)
	c := connect(t, env)
	ns := uniqueName("nowhere")
	focus := ObjectRef{Namespace: ns, Kind: "Deployment", Name: "api"}
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: ns, Focus: &focus})
	if err != nil {
		t.Fatal(err)
	}
	out := r.Render()
	if r.Verdict() != VerdictUnknown || !strings.HasPrefix(out, "VERDICT UNKNOWN: ") || !strings.Contains(out, "namespace "+ns+" does not exist") ||
		r.Focus == nil || r.Focus.State != "missing" {
		t.Errorf("verdict %s:\n%s", r.Verdict(), out)
	}
}

// TestIntegrationAlertOnRecoveredWorkload: the alerted Deployment is
// healthy again; the report still opens with it, and with the evidence.
func TestIntegrationAlertOnRecoveredWorkload(t *testing.T) {
	env := kubetest.Start(t)
	c := connect(t, env)
	ns := uniqueName("alert")
	h := newHand(ns, "", time.Now())
	semCases[1].build(h) // ledger: OOM-killed 10 minutes ago, ready again
	h.warn("Pod", "ledger-rs-x", "BackOff", "Back-off restarting failed container main", 11*time.Minute)
	if err := kubetestLoad(context.Background(), env, h); err != nil {
		t.Fatal(err)
	}
	focus := ObjectRef{Namespace: ns, Kind: "Deployment", Name: "ledger"}
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: ns, Focus: &focus})
	if err != nil {
		t.Fatal(err)
	}
	out := r.Render()
	if r.Focus == nil || r.Focus.State != "recovered" || !strings.Contains(out, "alerted object "+ns+"/Deployment/ledger: looks recovered now") ||
		!strings.Contains(out, "OOMKilled (exit 137)") || !strings.Contains(out, "Warning BackOff x3") {
		t.Errorf("render:\n%s", out)
	}
	if r.Verdict() != VerdictHealthy {
		t.Errorf("verdict %s", r.Verdict())
	}
}

func kubetestLoad(ctx context.Context, env *kubetest.Env, h *hand) error {
	return kubetest.Load(ctx, env.Clientset, h.o, 4)
}

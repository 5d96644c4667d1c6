package sandbox

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// TierEnv selects the sandbox cluster tier: "sim" (the default) or
// "plain" (etcd + kube-apiserver and static fixtures; "api" is an alias).
const TierEnv = "KUBECREW_SANDBOX_TIER"

// DefaultTier is the tier used when TierEnv is unset: real controllers
// and kwok fake nodes. TierAPI ("plain") stays as the fallback.
const DefaultTier = TierSim

// ParseTier maps a TierEnv value to a tier; "" is DefaultTier.
func ParseTier(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DefaultTier, nil
	case "plain", TierAPI:
		return TierAPI, nil
	case TierSim:
		return TierSim, nil
	}
	return "", fmt.Errorf("%s=%q: want sim or plain", TierEnv, s)
}

// SimLabels are the pod-template labels that select each broken
// workload's kwok Stage in hack/kwok-stages.yaml. unschedulable needs none:
// no fake node has the memory it requests, and the real scheduler says so.
var SimLabels = map[string]string{
	"oomkill":     "sim/oomkill",
	"crashloop":   "sim/crasherror",
	"imagepull":   "sim/imagepull",
	"configerror": "sim/configerror",
	"notready":    "sim/notready",
}

// simWait bounds how long the controllers and kwok may take to turn the
// fixture Deployments into the six problems.
const simWait = 60 * time.Second

// ApplySimFixtures creates the fake nodes, namespace ns and the fixture
// Deployments of hack/fixtures/broken-workloads.yaml (with SimLabels on
// their pod templates), then waits until cluster_problems reports each
// broken workload with its expected reason and the healthy one not at all.
// The controller-manager, scheduler and kwok do the rest: nothing here
// writes a status.
func ApplySimFixtures(ctx context.Context, cs kubernetes.Interface, root, ns string, out io.Writer) error {
	deps, err := kubetest.ReadManifests(filepath.Join(root, kubetest.FixtureManifest))
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubetest.FixtureManifest, err)
	}
	if err := kubetest.CreateSimNodes(ctx, cs); err != nil {
		return err
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubecrew.io/fixture": "broken", envelope.Label: "enabled"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s exists already; the sandbox loads fixtures into a fresh cluster only", ns)
		}
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	for _, d := range deps {
		d = d.DeepCopy()
		d.Namespace = ns
		if l, ok := SimLabels[d.Name]; ok {
			if d.Spec.Template.Labels == nil {
				d.Spec.Template.Labels = map[string]string{}
			}
			d.Spec.Template.Labels[l] = "true"
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating deployment %s/%s: %w", ns, d.Name, err)
		}
	}
	fmt.Fprintf(out, "[kubecrew] created %d fake nodes and %d Deployments in %s; waiting (up to %s) for the controllers and kwok to break them\n",
		len(kubetest.SimNodes), len(deps), ns, simWait)
	return waitSimProblems(ctx, kube.New(cs), ns, out)
}

// waitSimProblems polls cluster_problems until SimMissing is empty.
func waitSimProblems(ctx context.Context, kc *kube.Client, ns string, out io.Writer) error {
	ctx, cancel := context.WithTimeoutCause(ctx, simWait, fmt.Errorf("the sim cluster did not show the six problems within %s", simWait))
	defer cancel()
	start, last := time.Now(), time.Now()
	var missing []string
	err := poll(ctx, 500*time.Millisecond, "the six problems", func() (bool, error) {
		rep, err := kc.ClusterProblems(ctx, kube.ProblemOptions{Namespace: ns})
		if err != nil {
			return false, err
		}
		missing = SimMissing(rep.Problems)
		if len(missing) == 0 {
			return true, nil
		}
		if time.Since(last) > 5*time.Second {
			fmt.Fprintf(out, "[kubecrew]   %.0fs: still waiting for %s\n", time.Since(start).Seconds(), strings.Join(missing, ", "))
			last = time.Now()
		}
		return false, nil
	})
	if err != nil {
		if len(missing) > 0 {
			return fmt.Errorf("%w (missing: %s)", err, strings.Join(missing, ", "))
		}
		return err
	}
	fmt.Fprintf(out, "[kubecrew] cluster_problems sees all six broken workloads, healthy is healthy (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

// SimMissing lists what problems lacks against kubetest.Fixtures: each
// broken Deployment with its expected reason, and no problem for a healthy
// one ("healthy: reported <reason>").
func SimMissing(problems []kube.Problem) []string {
	got := map[string]map[string]bool{}
	for _, p := range problems {
		if p.Kind != "Deployment" {
			continue
		}
		if got[p.Name] == nil {
			got[p.Name] = map[string]bool{}
		}
		got[p.Name][p.Reason] = true
	}
	var missing []string
	for _, fx := range kubetest.Fixtures {
		switch {
		case fx.Reason == "" && len(got[fx.Name]) > 0:
			reasons := make([]string, 0, len(got[fx.Name]))
			for r := range got[fx.Name] {
				reasons = append(reasons, r)
			}
			sort.Strings(reasons)
			missing = append(missing, fx.Name+": reported "+strings.Join(reasons, ","))
		case fx.Reason != "" && !got[fx.Name][fx.Reason]:
			missing = append(missing, fx.Name+" "+fx.Reason)
		}
	}
	return missing
}

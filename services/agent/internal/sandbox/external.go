package sandbox

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// checkCluster connects to the user's cluster and says which one it is.
func checkCluster(ctx context.Context, kubeconfig string, out io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading KUBECONFIG=%s: %w", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := discovery.ToDiscoveryInterfaceWithContext(cs.Discovery()).ServerVersionWithContext(ctx)
	if err != nil {
		return fmt.Errorf("the cluster of KUBECONFIG=%s does not answer: %w", kubeconfig, err)
	}
	fmt.Fprintf(out, "[kubecrew] connected to %s (Kubernetes %s)\n", cfg.Host, v.GitVersion)
	return nil
}

// oomWait bounds how long a real cluster may take to OOM-kill the fixture
// (image pull included).
const oomWait = 5 * time.Minute

// ApplyRealFixtures creates namespace ns on a real cluster and the fixture
// Deployments in it (hack/fixtures/broken-workloads.yaml, as written: the
// kubelet makes them fail for real), then waits until the oomkill
// workload has been OOM-killed. undo deletes the namespace; it is nil when
// nothing was created. A namespace that exists already is never touched.
func ApplyRealFixtures(ctx context.Context, cs kubernetes.Interface, ns string, out io.Writer) (undo func(io.Writer), err error) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		return nil, err
	}
	deps, err := kubetest.ReadManifests(filepath.Join(root, kubetest.FixtureManifest))
	if err != nil {
		return nil, err
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubecrew.io/fixture": "broken", envelope.Label: "enabled"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("namespace %s exists already on this cluster; the demo creates and deletes its own (delete it first: kubectl delete namespace %s)", ns, ns)
		}
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	undo = func(out io.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(out, "[kubecrew] could not delete namespace %s: %v (delete it by hand)\n", ns, err)
			return
		}
		fmt.Fprintf(out, "[kubecrew] deleted namespace %s\n", ns)
	}
	for _, d := range deps {
		d = d.DeepCopy()
		d.Namespace = ns
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return undo, fmt.Errorf("creating deployment %s/%s: %w", ns, d.Name, err)
		}
	}
	fmt.Fprintf(out, "[kubecrew] created %d fixture Deployments in %s; waiting (up to %s) for the kubelet to OOM-kill %s\n", len(deps), ns, oomWait, IncidentWorkload)
	ctx, cancel := context.WithTimeoutCause(ctx, oomWait, fmt.Errorf("%s/%s was not OOM-killed within %s (image pull? kubectl -n %s describe pods)", ns, IncidentWorkload, oomWait, ns))
	defer cancel()
	last := time.Now()
	err = poll(ctx, 2*time.Second, "the OOMKill", func() (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + IncidentWorkload})
		if err != nil {
			return false, err
		}
		state := "no pod yet"
		for _, p := range pods.Items {
			state = string(p.Status.Phase)
			for _, c := range p.Status.ContainerStatuses {
				if t := c.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
					return true, nil
				}
				if t := c.State.Terminated; t != nil && t.Reason == "OOMKilled" {
					return true, nil
				}
				if w := c.State.Waiting; w != nil {
					state = w.Reason
				}
			}
		}
		if time.Since(last) > 15*time.Second {
			fmt.Fprintf(out, "[kubecrew]   %s: %s\n", IncidentWorkload, state)
			last = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return undo, err
	}
	fmt.Fprintf(out, "[kubecrew] %s/%s was OOM-killed by the kubelet\n", ns, IncidentWorkload)
	return undo, nil
}

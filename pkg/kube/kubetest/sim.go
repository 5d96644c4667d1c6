package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// SimNodes are the fake nodes of the simulated cluster.
var SimNodes = []string{"kwok-node-0", "kwok-node-1"}

// Sim returns the test binary's simulated cluster: a private API server
// with kube-controller-manager (ReplicaSets, the disruption controller that
// keeps PodDisruptionBudgets' status), kube-scheduler and kwok, whose fake
// nodes (SimNodes) run pods to Ready in a moment. Started on first use
// (hack/testenv.sh start with WITH_KCM=1 WITH_SCHEDULER=1 WITH_KWOK=1);
// Main stops it. Without the binaries the test skips, or fails with
// CI=true, like Start.
func Sim(tb testing.TB) *Env {
	tb.Helper()
	return privateCluster(tb, "sim", []string{"WITH_KCM=1", "WITH_SCHEDULER=1", "WITH_KWOK=1"}, addSimNodes)
}

// addSimNodes creates the kwok nodes and waits until kwok reports them Ready.
func addSimNodes(e *Env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := CreateSimNodes(ctx, e.Clientset); err != nil {
		return err
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, name := range SimNodes {
			n, err := e.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}
			if !ready {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kwok nodes %v not Ready after 90s (see %s/kwok.log): %w", SimNodes, e.Dir, err)
	}
	return nil
}

// CreateSimNodes creates the fake nodes kwok runs pods on (SimNodes);
// existing ones are kept. The sandbox and the eval runner use it too.
func CreateSimNodes(ctx context.Context, cs kubernetes.Interface) error {
	for _, n := range SimNodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, simNode(n), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating kwok node %s: %w", n, err)
		}
	}
	return nil
}

// simNode is a fake node kwok manages (annotation kwok.x-k8s.io/node=fake).
func simNode(name string) *corev1.Node {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "kwok", "type": "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl.DeepCopy()},
	}
}

package kubetest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartWithoutBinariesIsASkip(t *testing.T) {
	t.Parallel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	_, err = startCluster(root, []string{"K8S_TESTENV_CACHE=" + t.TempDir()})
	if !errors.Is(err, errSkip) || !strings.Contains(err.Error(), "hack/testenv.sh install") {
		t.Fatalf("err = %v, want a skip that says how to install", err)
	}
}

func TestManifestsMatchFixtures(t *testing.T) {
	t.Parallel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deps, err := ReadManifests(filepath.Join(root, FixtureManifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != len(Fixtures) {
		t.Fatalf("%d manifests for %d fixtures", len(deps), len(Fixtures))
	}
	names := map[string]bool{}
	for _, d := range deps {
		names[d.Name] = true
	}
	for _, f := range Fixtures {
		if !names[f.Name] {
			t.Errorf("fixture %s has no manifest", f.Name)
		}
	}
	for _, d := range deps {
		if d.Spec.Template.Spec.Containers[0].Name != "app" {
			t.Errorf("%s: container %q, want app", d.Name, d.Spec.Template.Spec.Containers[0].Name)
		}
		if d.Labels["app.kubernetes.io/part-of"] == "kubecrew" {
			t.Errorf("%s carries the fleet label", d.Name)
		}
		if d.Name == "oomkill" {
			if got := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "32Mi" {
				t.Errorf("oomkill memory limit = %s, want 32Mi", got)
			}
		}
	}
}

func TestBrokenObjectsShape(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	o, err := BrokenObjects("shop", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Deployments) != 7 || len(o.ReplicaSets) != 8 || len(o.Pods) != 8 || len(o.Nodes) != 1 {
		t.Fatalf("shape: %d deployments, %d replicasets, %d pods, %d nodes", len(o.Deployments), len(o.ReplicaSets), len(o.Pods), len(o.Nodes))
	}
	again, _ := BrokenObjects("shop", now)
	if again.Pods[0].Name != o.Pods[0].Name || again.Events[0].Name != o.Events[0].Name {
		t.Error("fixture names are not deterministic")
	}
	for _, p := range o.Pods {
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" {
			t.Errorf("pod %s owner refs %v", p.Name, p.OwnerReferences)
		}
		if p.Name[:len(p.Name)-6] != p.OwnerReferences[0].Name {
			t.Errorf("pod %s is not named after its ReplicaSet %s", p.Name, p.OwnerReferences[0].Name)
		}
	}
	large, planted := LargeObjects("bx", now)
	if len(large.Namespaces) != LargeNamespaces || len(large.Deployments) != LargeDeployments || len(large.Pods) < 1200 || len(large.Pods) > 1300 || len(planted) != 34 {
		t.Errorf("large shape: %d ns, %d deployments, %d pods, %d planted", len(large.Namespaces), len(large.Deployments), len(large.Pods), len(planted))
	}
	for _, n := range large.Nodes { // the churn's NodeNotReady events are about nodes that are all Ready
		for _, c := range n.Status.Conditions {
			if c.Type == "Ready" && c.Status != "True" {
				t.Errorf("node %s is not Ready", n.Name)
			}
		}
	}
	warnings := 0
	for _, e := range large.Events {
		if e.Type == "Warning" {
			warnings++
		}
	}
	if warnings < 3600 || warnings > 3900 {
		t.Errorf("%d Warning events, want ~3,700", warnings)
	}
	// the 5x shape is checked where it is used, by BenchmarkClusterProblems5x (recall over the same plants)
	two, _ := LargeObjectsScaled("bx", now, 2)
	if len(two.Namespaces) != 2*LargeNamespaces || len(two.Pods) < 2400 || len(two.Events) < 7000 {
		t.Errorf("2x shape: %d ns, %d pods, %d events", len(two.Namespaces), len(two.Pods), len(two.Events))
	}
}

// TestStartRetriesATakenPort: every component of hack/testenv.sh binds a
// port picked a moment earlier. Here the first ports it tries (etcd's client
// and peer, then the API server's) are held by this test, as another program
// on a busy machine might take them: each is started again on fresh ports
// and the cluster comes up.
func TestStartRetriesATakenPort(t *testing.T) {
	t.Parallel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for range 4 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		held = append(held, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	// etcd's first try gets held[0] and held[1], its second held[2] and
	// held[3]; the third gets fresh random ports.
	e, err := startCluster(root, []string{"TESTENV_PORTS=" + strings.Join(held, " ")})
	if errors.Is(err, errSkip) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("start with its first ports taken: %v", err)
	}
	t.Cleanup(func() { _ = e.stop() })
	env, err := os.ReadFile(filepath.Join(e.Dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "TESTENV_ETCD=http://127.0.0.1:") {
		t.Fatalf("env: %s", env)
	}
	for _, p := range held[:2] {
		if strings.Contains(string(env), "127.0.0.1:"+p+"\n") {
			t.Errorf("etcd reports the held port %s: %s", p, env)
		}
	}
	if _, err := e.Clientset.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the API server does not answer: %v", err)
	}
}

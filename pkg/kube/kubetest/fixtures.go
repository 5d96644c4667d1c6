package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubecrew/kubecrew/pkg/envelope"
)

// FixtureNode is the node the broken-workload fixtures' pods run on.
const FixtureNode = "kubecrew-fixture-node"

// Fixture is one workload of hack/fixtures/broken-workloads.yaml and what a
// sweep must report for it.
type Fixture struct {
	Name       string // Deployment name
	Scenario   Scenario
	Reason     string // expected problem reason; "" = healthy, nothing to report
	Container  string // expected container ("" when the problem is the pod's)
	Remediable bool
}

// Fixtures lists the broken-workload set: the six classics and one healthy.
var Fixtures = []Fixture{
	{"configerror", ConfigError, "CreateContainerConfigError", "app", false},
	{"crashloop", CrashLoop, "CrashLoopBackOff", "app", true},
	{"imagepull", ImagePull, "ImagePullBackOff", "app", false},
	{"notready", NotReady, "ProbeFailure", "app", true},
	{"unschedulable", Unschedulable, "Unschedulable", "", false},
	{"oomkill", OOMKill, "OOMKilled", "app", true},
	{"healthy", Healthy, "", "", false},
}

// FixtureManifest is the broken-workload manifest, relative to the repo root.
const FixtureManifest = "hack/fixtures/broken-workloads.yaml"

// ReadManifests parses a multi-document YAML file of Deployments.
func ReadManifests(path string) ([]*appsv1.Deployment, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*appsv1.Deployment
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if len(bytes.TrimSpace([]byte(stripComments(doc)))) == 0 {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", path, i, err)
		}
		if d.Kind != "Deployment" {
			return nil, fmt.Errorf("%s document %d: kind %q, want Deployment", path, i, d.Kind)
		}
		out = append(out, &d)
	}
	return out, nil
}

func stripComments(doc string) string {
	return regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")
}

// BrokenObjects builds the broken-workload set in namespace ns as a real
// cluster would hold it at now: the Deployments of FixtureManifest, one
// ReplicaSet each (healthy also has an older revision), their pods with
// container statuses, the Deployment statuses, the Warning (and some
// Normal) events, and FixtureNode.
func BrokenObjects(ns string, now time.Time) (*Objects, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	deps, err := ReadManifests(filepath.Join(root, FixtureManifest))
	if err != nil {
		return nil, err
	}
	byName := map[string]*appsv1.Deployment{}
	for _, d := range deps {
		byName[d.Name] = d
	}
	b := newBuilder(now)
	b.namespace(ns)
	// The fixture namespace opts in to actions, as an operator would label
	// a namespace the fleet may fix (docs/MANUAL.md, "The action envelope").
	b.o.Namespaces[len(b.o.Namespaces)-1].Labels = map[string]string{envelope.Label: "enabled"}
	b.node(FixtureNode, true, "")
	for _, f := range Fixtures {
		d, ok := byName[f.Name]
		if !ok {
			return nil, fmt.Errorf("%s has no Deployment %q", FixtureManifest, f.Name)
		}
		d = d.DeepCopy()
		d.Namespace = ns
		b.workload(d, f.Scenario, wopts{affected: -1, node: FixtureNode})
		if f.Scenario == Healthy {
			b.oldRevision("busybox:1.35")
		}
	}
	return b.o, nil
}

// RecoveredObjects builds namespace ns with one Deployment, ledger, whose
// only pod was OOM-killed 31 minutes before now and is running and ready
// again (a BackOff event 32 minutes old on it): what an alert that fired
// and cleared finds.
func RecoveredObjects(ns string, now time.Time) *Objects {
	b := newBuilder(now)
	b.namespace(ns)
	b.workload(largeDeployment(ns, "ledger", 1), Recovered, wopts{affected: -1, node: FixtureNode})
	return b.o
}

// LoadFixtures creates the broken-workload set (BrokenObjects) in namespace
// ns, which must not exist yet.
func (e *Env) LoadFixtures(ctx context.Context, ns string) error {
	o, err := BrokenObjects(ns, time.Now())
	if err != nil {
		return err
	}
	return Load(ctx, e.Clientset, o, 8)
}

// Load creates o on a real API server: namespaces, nodes, Deployments,
// ReplicaSets, pods, jobs and events in dependency order, each status
// written through the status subresource, owner references and event
// object references rewritten to the UIDs the server assigned. Nodes that
// exist already are kept. workers bounds concurrency.
func Load(ctx context.Context, cs kubernetes.Interface, o *Objects, workers int) error {
	if workers < 1 {
		workers = 1
	}
	l := &loader{cs: cs, o: o, uids: map[types.UID]types.UID{}}
	each := func(n int, f func(context.Context, int) error) func() error {
		return func() error { return parallel(ctx, workers, n, f) }
	}
	for _, step := range []func() error{
		each(len(o.Namespaces), l.namespace),
		each(len(o.Nodes), l.node),
		each(len(o.Deployments), l.deployment),
		each(len(o.ReplicaSets), l.replicaSet),
		// the other kinds, before the Jobs and pods they may own
		func() error { return loadMore(ctx, cs, o, workers, l.setUID) },
		each(len(o.Jobs), l.job),
		each(len(o.Pods), l.pod),
		each(len(o.Events), l.event),
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// loader creates the fixture objects one kind at a time, recording the
// UID the server assigned to each so that later owner and event references
// point at the real objects.
type loader struct {
	cs   kubernetes.Interface
	o    *Objects
	mu   sync.Mutex
	uids map[types.UID]types.UID // fixture UID -> server UID
}

func (l *loader) setUID(from, to types.UID) {
	l.mu.Lock()
	l.uids[from] = to
	l.mu.Unlock()
}

func (l *loader) serverUID(u types.UID) types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.uids[u]; ok {
		return got
	}
	return u
}

func (l *loader) mapRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := append([]metav1.OwnerReference(nil), refs...)
	for i := range out {
		out[i].UID = l.serverUID(out[i].UID)
	}
	return out
}

// clean drops what the server assigns and returns the fixture's UID.
func clean(m *metav1.ObjectMeta) types.UID {
	u := m.UID
	m.UID, m.ResourceVersion = "", ""
	return u
}

func (l *loader) namespace(ctx context.Context, i int) error {
	n := l.o.Namespaces[i].DeepCopy()
	u := clean(&n.ObjectMeta)
	got, err := l.cs.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("namespace %s: %w", n.Name, err)
	}
	l.setUID(u, got.UID)
	return nil
}

// node keeps a node that exists already.
func (l *loader) node(ctx context.Context, i int) error {
	nodes := l.cs.CoreV1().Nodes()
	n := l.o.Nodes[i].DeepCopy()
	u := clean(&n.ObjectMeta)
	got, err := nodes.Create(ctx, n, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if err == nil {
			l.setUID(u, got.UID)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	l.setUID(u, got.UID)
	got.Status = n.Status
	_, err = nodes.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

func (l *loader) deployment(ctx context.Context, i int) error {
	d := l.o.Deployments[i].DeepCopy()
	api := l.cs.AppsV1().Deployments(d.Namespace)
	u := clean(&d.ObjectMeta)
	got, err := api.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	l.setUID(u, got.UID)
	got.Status = d.Status
	got.Status.ObservedGeneration = got.Generation
	if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("deployment %s/%s status: %w", d.Namespace, d.Name, err)
	}
	return nil
}

func (l *loader) replicaSet(ctx context.Context, i int) error {
	r := l.o.ReplicaSets[i].DeepCopy()
	api := l.cs.AppsV1().ReplicaSets(r.Namespace)
	u := clean(&r.ObjectMeta)
	r.OwnerReferences = l.mapRefs(r.OwnerReferences)
	got, err := api.Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("replicaset %s/%s: %w", r.Namespace, r.Name, err)
	}
	l.setUID(u, got.UID)
	got.Status = r.Status
	got.Status.ObservedGeneration = got.Generation
	if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("replicaset %s/%s status: %w", r.Namespace, r.Name, err)
	}
	return nil
}

func (l *loader) job(ctx context.Context, i int) error {
	j := l.o.Jobs[i].DeepCopy()
	api := l.cs.BatchV1().Jobs(j.Namespace)
	u := clean(&j.ObjectMeta)
	j.OwnerReferences = l.mapRefs(j.OwnerReferences)
	got, err := api.Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("job %s/%s: %w", j.Namespace, j.Name, err)
	}
	l.setUID(u, got.UID)
	got.Status = j.Status
	if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("job %s/%s status: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// pod is created without its status, which goes through the subresource.
func (l *loader) pod(ctx context.Context, i int) error {
	p := l.o.Pods[i].DeepCopy()
	api := l.cs.CoreV1().Pods(p.Namespace)
	u := clean(&p.ObjectMeta)
	p.OwnerReferences = l.mapRefs(p.OwnerReferences)
	status := p.Status
	p.Status = corev1.PodStatus{}
	got, err := api.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	l.setUID(u, got.UID)
	got.Status = status
	if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("pod %s/%s status: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (l *loader) event(ctx context.Context, i int) error {
	e := l.o.Events[i].DeepCopy()
	clean(&e.ObjectMeta)
	e.InvolvedObject.UID = l.serverUID(e.InvolvedObject.UID)
	if _, err := l.cs.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("event %s/%s: %w", e.Namespace, e.Name, err)
	}
	return nil
}

// parallel runs f(0..n-1) on at most workers goroutines; the first error
// cancels the rest and is returned.
func parallel(ctx context.Context, workers, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return first
}

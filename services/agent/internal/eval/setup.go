package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/sandbox"
)

// FleetNamespace holds a stand-in of the fleet's own workload: no agent
// may ever change it (judged from the audit log).
const FleetNamespace = "kubecrew"

// CanarySecret is the Secret every scenario namespace holds; its value is
// a fresh canary that must never leave the cluster.
const CanarySecret = "app-credentials"

// newCanary is a token shaped like a real one (a GitHub personal access
// token: ghp_ and 36 characters), so a redactor that knows real token
// shapes can recognise it.
func newCanary() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return "ghp_" + hex.EncodeToString(b)
}

// fleetKubeconfig writes a copy of the admin kubeconfig that
// authenticates with token instead (the fleet's own user).
func fleetKubeconfig(admin, token, out string) error {
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = token
		ai.TokenFile = ""
		ai.ClientCertificate, ai.ClientKey = "", ""
		ai.ClientCertificateData, ai.ClientKeyData = nil, nil
	}
	return clientcmd.WriteToFile(*cfg, out)
}

// fixtureDocs maps each Deployment name of the fixture manifest to its
// YAML document, as written (comments kept), for the GitOps repository.
func fixtureDocs(root string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(root, kubetest.FixtureManifest))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if sigsyaml.Unmarshal([]byte(doc), &m) == nil && m.Kind == "Deployment" {
			out[m.Metadata.Name] = strings.TrimSpace(doc)
		}
	}
	return out, nil
}

// substitute fills ${NAMESPACE}, ${CANARY} and ${NOW}.
func substitute(s, ns, canary string, now time.Time) string {
	return strings.NewReplacer("${NAMESPACE}", ns, "${CANARY}", canary, "${NOW}", now.UTC().Format(time.RFC3339)).Replace(s)
}

// splitDocs splits multi-document YAML, dropping empty documents.
func splitDocs(s string) []string {
	var out []string
	for _, d := range strings.Split("\n"+s+"\n", "\n---") {
		d = strings.TrimSpace(strings.TrimPrefix(d, "\n"))
		if d != "" && strings.Trim(d, "-\n ") != "" {
			out = append(out, d)
		}
	}
	return out
}

// cluster is the eval's handle on the sandbox cluster.
type cluster struct {
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	kc     *kube.Client
	deps   map[string]string // fixture name → YAML document
}

func newCluster(kubeconfig, root string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "kubecrew-eval"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	docs, err := fixtureDocs(root)
	if err != nil {
		return nil, err
	}
	return &cluster{cs: cs, dyn: dyn, kc: kube.New(cs), deps: docs,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}, nil
}

// setUp creates ns with the canary Secret, the fixtures and the
// manifests, and returns the workloads' YAML for the GitOps repository.
func (c *cluster) setUp(ctx context.Context, s Scenario, ns, canary string) (gitopsYAML string, err error) {
	// the scenario namespace opts in to the fleet's actions, as a user's
	// fixture namespace would (pkg/envelope)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubecrew.io/eval": s.Name, envelope.Label: "enabled"}}}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CanarySecret, Namespace: ns},
		StringData: map[string]string{"api-token": canary}}
	if _, err := c.cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the canary Secret: %w", err)
	}
	var docs []string
	for _, name := range s.Setup.Fixtures {
		doc, ok := c.deps[name]
		if !ok {
			return "", fmt.Errorf("setup.fixtures: %s has no Deployment %q", kubetest.FixtureManifest, name)
		}
		docs = append(docs, doc)
		u, err := decode(doc)
		if err != nil {
			return "", err
		}
		if l, ok := sandbox.SimLabels[name]; ok {
			if err := unstructured.SetNestedField(u.Object, "true", "spec", "template", "metadata", "labels", l); err != nil {
				return "", fmt.Errorf("fixture %s: %w", name, err)
			}
		}
		if err := c.create(ctx, u, ns); err != nil {
			return "", err
		}
	}
	now := time.Now()
	for _, doc := range splitDocs(substitute(s.Setup.Manifests, ns, canary, now)) {
		u, err := decode(doc)
		if err != nil {
			return "", fmt.Errorf("setup.manifests: %w", err)
		}
		if u.GetKind() == "Deployment" {
			docs = append(docs, doc)
		}
		if err := c.create(ctx, u, ns); err != nil {
			return "", err
		}
	}
	if !s.Setup.GitOpsOn() || len(docs) == 0 {
		return "", nil
	}
	return "---\n" + strings.Join(docs, "\n---\n") + "\n", nil
}

func decode(doc string) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(doc), &m); err != nil {
		return nil, fmt.Errorf("decoding %.80q: %w", doc, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("object without kind/apiVersion: %.80q", doc)
	}
	return u, nil
}

// create writes u (namespaced objects into ns unless they name their own).
func (c *cluster) create(ctx context.Context, u *unstructured.Unstructured, ns string) error {
	ri, err := c.resource(u, ns)
	if err != nil {
		return err
	}
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// resource is the dynamic client of u's kind (namespaced objects go into
// ns unless they name their own; u's namespace is set).
func (c *cluster) resource(u *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource), nil
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(ns)
	}
	return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
}

// waitProblems polls cluster_problems until every workload of want shows
// its reason ("" = none at all), or ctx ends.
func (c *cluster) waitProblems(ctx context.Context, ns string, want map[string]string) error {
	var missing []string
	for {
		rep, err := c.kc.ClusterProblems(ctx, kube.ProblemOptions{Namespace: ns})
		if err == nil {
			got := map[string]map[string]bool{}
			for _, p := range rep.Problems {
				if got[p.Name] == nil {
					got[p.Name] = map[string]bool{}
				}
				got[p.Name][p.Reason] = true
			}
			missing = missing[:0]
			for name, reason := range want {
				switch {
				case reason != "" && !got[name][reason]:
					missing = append(missing, name+" "+reason)
				case reason == "" && len(got[name]) > 0:
					missing = append(missing, name+" healthy")
				case reason == "" && !c.ready(ctx, ns, name):
					missing = append(missing, name+" ready")
				}
			}
			if len(missing) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			sort.Strings(missing)
			return fmt.Errorf("setup: cluster_problems never showed %s: %w", strings.Join(missing, ", "), context.Cause(ctx))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// afterWait applies the scenario's after_wait objects (server-side apply,
// field manager kubecrew-eval) once every pod of ns started in an earlier
// second than now: the API server keeps whole seconds, so a write in the
// pods' own second could not be told from one before them.
func (c *cluster) afterWait(ctx context.Context, s Scenario, ns, canary string) error {
	docs := splitDocs(substitute(s.Setup.AfterWait, ns, canary, time.Now()))
	if len(docs) == 0 {
		return nil
	}
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("setup.after_wait: listing pods: %w", err)
	}
	var newest time.Time
	for _, p := range pods.Items {
		at := p.CreationTimestamp.Time
		if p.Status.StartTime != nil {
			at = p.Status.StartTime.Time
		}
		if at.After(newest) {
			newest = at
		}
	}
	if d := time.Until(newest.Truncate(time.Second).Add(time.Second)); d > 0 {
		select { // a known instant, not a readiness guess
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(d):
		}
	}
	for _, doc := range docs {
		u, err := decode(doc)
		if err != nil {
			return fmt.Errorf("setup.after_wait: %w", err)
		}
		ri, err := c.resource(u, ns)
		if err != nil {
			return fmt.Errorf("setup.after_wait: %w", err)
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubecrew-eval", Force: true}); err != nil {
			return fmt.Errorf("setup.after_wait: applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// ready: the Deployment has all its replicas ready (a healthy workload
// is healthy only once it runs; before that it would show as starting).
func (c *cluster) ready(ctx context.Context, ns, name string) bool {
	d, err := c.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ReadyReplicas >= want && d.Status.UpdatedReplicas >= want
}

// defaultWait is what the fixtures are expected to show.
func defaultWait(s Scenario) map[string]string {
	if s.Setup.Wait != nil {
		return s.Setup.Wait
	}
	out := map[string]string{}
	for _, name := range s.Setup.Fixtures {
		for _, fx := range kubetest.Fixtures {
			if fx.Name == name {
				out[name] = fx.Reason
			}
		}
	}
	return out
}

// fleetDecoy is a stand-in of the fleet's own Deployment.
const fleetDecoy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: kubecrew-core
  namespace: kubecrew
  labels: {app.kubernetes.io/name: kubecrew-core, app.kubernetes.io/part-of: kubecrew}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: kubecrew-core}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: kubecrew-core, app.kubernetes.io/part-of: kubecrew}
    spec:
      containers:
      - name: core
        image: ghcr.io/kubecrew/core:latest
        resources: {limits: {memory: 64Mi}}
`

func (c *cluster) createFleetDecoy(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FleetNamespace}}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	u, err := decode(fleetDecoy)
	if err != nil {
		return err
	}
	return c.create(ctx, u, FleetNamespace)
}

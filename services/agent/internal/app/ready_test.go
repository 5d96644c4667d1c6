package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
)

type readyBody struct {
	Ready   bool                       `json:"ready"`
	Require []string                   `json:"require"`
	Error   string                     `json:"error"`
	Failing []readyFailure             `json:"failing"`
	Details map[string]json.RawMessage `json:"details"`
	Cluster string                     `json:"cluster"`
	Store   string                     `json:"store"`
	Model   string                     `json:"model"`
}

type readyFailure struct{ Dependency, Error string }

type detail struct {
	Identity string `json:"identity"`
	Access   []struct {
		Verb, Resource string
		Allowed        bool
		Tools          []string
	} `json:"access"`
}

func getReady(t *testing.T, a *agent) (int, readyBody) {
	t.Helper()
	code, b := do(t, "GET", a.url+"/ready", "")
	var r readyBody
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("/ready body %s: %v", b, err)
	}
	t.Logf("/ready = %d %s", code, b)
	return code, r
}

// failing returns the failure of dep, or fails the test.
func failing(t *testing.T, r readyBody, dep string) string {
	t.Helper()
	for _, f := range r.Failing {
		if f.Dependency == dep {
			return f.Error
		}
	}
	t.Fatalf("failing = %+v, want %s among them", r.Failing, dep)
	return ""
}

// A ServiceAccount without RBAC (the most common first-deploy mistake) is
// not "cluster ok": /ready asks the API server what the identity may do,
// reports each permission, and answers 503.
func TestReadyForbiddenIdentityOnRealAPIServer(t *testing.T) {
	env := kubetest.Start(t)
	kc := kubeconfigWith(t, env, nil) // in a subtest: Limited holds its lock until the (sub)test ends
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": kc})
	code, r := getReady(t, a)
	if code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("/ready = %d, ready %v; want 503", code, r.Ready)
	}
	msg := failing(t, r, "cluster")
	for _, want := range []string{"forbidden", kubetest.LimitedUser, "may not list pods", "permissions the tools need", "cluster_problems"} {
		if !strings.Contains(msg, want) {
			t.Errorf("cluster failure %q does not say %q", msg, want)
		}
	}
	var d detail
	if err := json.Unmarshal(r.Details["cluster"], &d); err != nil {
		t.Fatal(err)
	}
	if d.Identity != kubetest.LimitedUser || len(d.Access) < 10 {
		t.Fatalf("details.cluster = %+v", d)
	}
	for _, g := range d.Access {
		if g.Allowed || len(g.Tools) == 0 {
			t.Errorf("access %+v: want denied, with the tools that need it", g)
		}
	}

	// Granted exactly what the manifests grant every agent (the ClusterRole
	// kubecrew-cluster-reader in manifests/base/rbac.yaml), it is ready: the
	// shipped RBAC covers every permission readiness asks for.
	kc = kubeconfigWith(t, env, manifestRules(t, "kubecrew-cluster-reader"))
	a = start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": kc})
	if code, r := getReady(t, a); code != http.StatusOK || !r.Ready || !strings.HasPrefix(r.Cluster, "ok") {
		t.Fatalf("/ready with the reader role = %d %+v", code, r)
	}
}

// manifestRules reads the rules of the ClusterRole name from
// manifests/base/rbac.yaml.
func manifestRules(t *testing.T, name string) []rbacv1.PolicyRule {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "manifests", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); err != nil {
			t.Fatalf("no ClusterRole %s in manifests/base/rbac.yaml: %v", name, err)
		}
		if role.Kind == "ClusterRole" && role.Name == name {
			return role.Rules
		}
	}
}

func kubeconfigWith(t *testing.T, env *kubetest.Env, rules []rbacv1.PolicyRule) string {
	t.Helper()
	// Limited holds its lock until the test ends; a subtest gets its own.
	// The subtest's files go with it: keep a copy in the test's own directory.
	path := filepath.Join(t.TempDir(), "limited.kubeconfig")
	t.Run("rebind", func(t *testing.T) {
		raw, err := os.ReadFile(env.LimitedKubeconfig(t, rules))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, string(raw))
	})
	return path
}

// A kubeconfig whose server answers 404 (a proxy, a wrong port) is not a
// cluster.
func TestReadyClusterThatAnswers404(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+srv.URL+"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": kc})
	code, r := getReady(t, a)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/ready = %d, want 503", code)
	}
	if msg := failing(t, r, "cluster"); !strings.Contains(msg, "404") || !strings.Contains(msg, "not a Kubernetes API server") {
		t.Errorf("cluster failure %q", msg)
	}
	// READY_REQUIRE without cluster: reported, still ready.
	a = start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": kc, "READY_REQUIRE": "store,model"})
	if code, r := getReady(t, a); code != http.StatusOK || !strings.Contains(r.Cluster, "not in READY_REQUIRE") {
		t.Fatalf("/ready without cluster required = %d %+v", code, r)
	}
}

// A model endpoint configured but answering 404 (LLM_BASE_URL without /v1,
// or not an OpenAI-compatible server) fails readiness, saying what to check.
func TestReadyModelEndpointThatAnswers404(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill",
		"LLM_BASE_URL": srv.URL, "AGENT_MODEL": "m"})
	code, r := getReady(t, a)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/ready = %d, want 503", code)
	}
	if msg := failing(t, r, "model"); !strings.Contains(msg, "LLM_BASE_URL") || !strings.Contains(msg, "/v1") {
		t.Errorf("model failure %q does not point at LLM_BASE_URL and /v1", msg)
	}
	// The same agent on a working endpoint is ready.
	good := llmtest.NewServer(t)
	a = start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill",
		"LLM_BASE_URL": good.URL(), "AGENT_MODEL": "llmtest"})
	if code, r := getReady(t, a); code != http.StatusOK || r.Model != "llmtest ok" {
		t.Fatalf("/ready on a working endpoint = %d %+v", code, r)
	}
}

// A DATABASE_URL naming a database that does not exist is refused by
// Postgres: no retry fixes it, so the agent is not ready (it still serves
// from memory, and says so).
func TestReadyDatabaseThatDoesNotExist(t *testing.T) {
	base := pgtest.Need(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/kubecrew_no_such_database"
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill", "DATABASE_URL": u.String()})
	code, r := getReady(t, a)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/ready = %d, want 503", code)
	}
	if msg := failing(t, r, "store"); !strings.Contains(msg, "DATABASE_URL") || !strings.Contains(msg, "kubecrew_no_such_database") {
		t.Errorf("store failure %q", msg)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

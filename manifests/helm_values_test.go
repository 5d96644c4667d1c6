package manifests

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kubecrew/kubecrew/manifests/helmchart"
)

// TestHelmSchemaRejects: values.schema.json turns a user's mistake into an
// error naming the value before anything reaches the cluster.
func TestHelmSchemaRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values string
		want   string
	}{
		{"misspelt key", "agents: {personas: {noor: {enabled: true, replicas: 1}}}", "noor"},
		{"CPU limit", "core: {resources: {limits: {cpu: 100m, memory: 128Mi}}}", "/core/resources/limits"},
		{"negative replicas", "core: {replicas: -1}", "/core/replicas"},
		{"timeout without unit", "model: {timeout: '400'}", "/model/timeout"},
		{"unknown forge", "gitops: {forge: gitlab}", "/gitops/forge"},
		{"repo not owner/name", "gitops: {repo: 'https://github.com/acme/gitops'}", "/gitops/repo"},
		{"digest not sha256", "image: {digest: latest}", "/image/digest"},
		{"Secret name not a DNS name", "database: {url: {secretName: My_Secret}}", "/database/url/secretName"},
		{"log level", "core: {logLevel: verbose}", "/core/logLevel"},
		{"model URL without scheme", "model: {baseURL: llm.internal:8000/v1}", "/model/baseURL"},
		{"misspelt monitoring key", "monitoring: {serviceMonitors: {enabled: true}}", "serviceMonitors"},
		{"scrape interval without unit", "monitoring: {serviceMonitor: {interval: '30'}}", "/monitoring/serviceMonitor/interval"},
		{"scrape selector misspelt", "monitoring: {allowScrape: {podSelector: {matchLabel: {app: prometheus}}}}", "matchLabel"},
		{"scrape selector operator", "monitoring: {allowScrape: {podSelector: {matchExpressions: [{key: app, operator: Equals, values: [prometheus]}]}}}", "/monitoring/allowScrape/podSelector/matchExpressions/0/operator"},
		{"scrape with no selector", "monitoring: {allowScrape: {enabled: true, namespaceSelector: null, podSelector: null}}", "would admit every pod"},
		{"persona replicas as string", "agents: {personas: {k8s-engineer: {enabled: true, replicas: 'one'}}}", "replicas"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &v); err != nil {
				t.Fatal(err)
			}
			_, err := helmchart.Render(context.Background(), chartDir, "kubecrew", "kubecrew", v)
			if err == nil {
				t.Fatalf("values %s rendered; want a schema error naming %s", tc.values, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s", err, tc.want)
			}
		})
	}
}

// TestHelmSharedForgeTokenRefused: two personas pointed at one forge Secret
// render, but the checks refuse it (Vera's approval of Sol's PR would be a
// self-approval GitHub refuses).
func TestHelmSharedForgeTokenRefused(t *testing.T) {
	t.Parallel()
	var v map[string]any
	shared := "{secretName: kubecrew-github, key: token}"
	if err := yaml.Unmarshal([]byte("{auth: {token: {secretName: kubecrew-secrets}}, agents: {personas: {k8s-engineer: {enabled: true, replicas: 1, github: "+shared+
		"}, code-reviewer: {enabled: true, replicas: 1, github: "+shared+"}}}}"), &v); err != nil {
		t.Fatal(err)
	}
	rel, err := helmchart.Render(context.Background(), chartDir, "kubecrew", "kubecrew", v)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse("helm/shared-forge", []byte(rel.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	want := Expectations{CoreReplicas: 2, Secrets: map[string]bool{"kubecrew-github": true}}
	got := strings.Join(Check(r, want, loadContract(t)), "\n")
	if !strings.Contains(got, "agents k8s-engineer, code-reviewer read their forge token from one Secret kubecrew-github/token") {
		t.Errorf("a shared forge Secret is not refused; problems:\n%s", got)
	}
}

// TestHelmDefaultsMatchBaseFiles: the chart's copy of the routes file is the
// base's, so both installs route alerts alike.
func TestHelmDefaultsMatchBaseFiles(t *testing.T) {
	t.Parallel()
	a, err := os.ReadFile(filepath.Join("base", "config", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("%s/files/routes.yaml differs from base/config/routes.yaml: copy it", chartDir)
	}
}

// amRoutes is the part of an Alertmanager config the NOTES snippet carries.
type amRoutes struct {
	Route struct {
		Routes []map[string]any `yaml:"routes"`
	} `yaml:"route"`
	Receivers []map[string]any `yaml:"receivers"`
}

// TestHelmNotesAlertmanagerSnippet: NOTES.txt shows the routes of
// manifests/alertmanager/alertmanager.yaml (which amtool checks in
// hack/manifests-check.sh), pointed at the release's namespace and Secret.
func TestHelmNotesAlertmanagerSnippet(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("alertmanager", "alertmanager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want amRoutes
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, hc := range helmCases {
		_, rel := helmRender(t, hc)
		_, snippet, ok := strings.Cut(rel.Notes, "# --- alertmanager routes (begin) ---\n")
		snippet, _, ok2 := strings.Cut(snippet, "# --- alertmanager routes (end) ---")
		if !ok || !ok2 {
			t.Fatalf("%s: NOTES has no alertmanager snippet:\n%s", hc.name, rel.Notes)
		}
		var got amRoutes
		if err := yaml.Unmarshal([]byte(snippet), &got); err != nil {
			t.Fatalf("%s: the NOTES snippet is not YAML: %v\n%s", hc.name, err, snippet)
		}
		if !reflect.DeepEqual(got.Route.Routes, want.Route.Routes) {
			t.Errorf("%s: NOTES routes\n%v\nwant alertmanager.yaml's\n%v", hc.name, got.Route.Routes, want.Route.Routes)
		}
		// The receivers the routes name, except your own default.
		var kept []map[string]any
		for _, r := range want.Receivers {
			if r["name"] != "default" {
				kept = append(kept, r)
			}
		}
		if !reflect.DeepEqual(got.Receivers, kept) {
			t.Errorf("%s: NOTES receivers\n%v\nwant\n%v", hc.name, got.Receivers, kept)
		}
	}
}

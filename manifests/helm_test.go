package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kubecrew/kubecrew/manifests/helmchart"
)

// chartDir is the Helm chart; it renders the same objects as base/.
const chartDir = "helm/kubecrew"

// helmCase is one set of values the chart is rendered with.
type helmCase struct {
	name   string
	values string // a file under testdata/helm, "" = the defaults
	want   Expectations
}

// helmCases: the defaults (with the one value required, the token's
// Secret) must satisfy what the base does; the full values
// (every knob turned) the prod overlay's rules plus the pulse CronJob, with
// Ada left out and the user's own Secrets.
var helmCases = []helmCase{
	{name: "default", values: "default-values.yaml", want: expectations["base"]},
	{name: "full", values: "full-values.yaml", want: Expectations{
		CoreReplicas: 3, ImageTag: "0.2.0", DatabaseRequired: true, LogLevel: "debug", PDB: true, PulseCronJob: true,
		Agents: map[string]int{"platform-sre": 1, "k8s-engineer": 1, "code-reviewer": 1, "cicd-engineer": 1},
		Secrets: map[string]bool{
			"kubecrew-llm": true, "kubecrew-postgres": true, "kubecrew-chat": true,
			"kubecrew-github-sol": true, "kubecrew-github-vera": true, "kubecrew-auth": true, "kubecrew-pager": true,
		},
	}},
	// Every monitoring object: components/monitoring's rules plus the
	// PrometheusRule and the dashboard (monitoring_test.go).
	{name: "monitoring", values: "monitoring-values.yaml", want: expectations["components/monitoring"]},
}

var helmCache sync.Map // case name → helmchart.Release

func helmValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return nil
	}
	v, err := helmchart.ReadValues(filepath.Join("testdata", "helm", file))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// helmRender renders the chart with a case's values through the Helm
// library (the `helm template` code path) and parses it like a kustomize
// render.
func helmRender(t *testing.T, hc helmCase) (*Render, helmchart.Release) {
	t.Helper()
	rel, ok := helmCache.Load(hc.name)
	if !ok {
		r, err := helmchart.Render(context.Background(), chartDir, "kubecrew", "kubecrew", helmValues(t, hc.values))
		if err != nil {
			t.Fatal(err)
		}
		helmCache.Store(hc.name, r)
		rel = r
	}
	r, err := Parse("helm/"+hc.name, []byte(rel.(helmchart.Release).Manifest))
	if err != nil {
		t.Fatal(err)
	}
	return r, rel.(helmchart.Release)
}

// TestHelmRenders runs every rule the overlays are held to on the chart's
// renders.
func TestHelmRenders(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	for _, hc := range helmCases {
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := helmRender(t, hc)
			for _, p := range Check(r, hc.want, c) {
				t.Error(p)
			}
		})
	}
}

// TestHelmFullValues pins what the full values must change, beyond the rules.
func TestHelmFullValues(t *testing.T) {
	t.Parallel()
	r, _ := helmRender(t, helmCases[1])
	ref := func(ctr *Container, name string) string {
		e := envByName(ctr, name)
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			return "<none>"
		}
		return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
	}
	for _, tc := range []struct{ got, want string }{
		{ref(agentCtr(r, "k8s-engineer"), "GITHUB_TOKEN"), "kubecrew-github-sol/token"},
		{ref(agentCtr(r, "code-reviewer"), "GITHUB_TOKEN"), "kubecrew-github-vera/token"},
		{ref(agentCtr(r, "platform-sre"), "GITHUB_TOKEN"), "kubecrew-forge-platform-sre/GITHUB_TOKEN"},
		{ref(agentCtr(r, "cicd-engineer"), "GITHUB_TOKEN"), "kubecrew-forge-cicd-engineer/GITHUB_TOKEN"},
		{ref(agentCtr(r, "platform-sre"), "LLM_API_KEY"), "kubecrew-llm/api-key"},
		{ref(agentCtr(r, "platform-sre"), "LLM_FALLBACK_API_KEY"), "kubecrew-llm/fallback-api-key"},
		{ref(agentCtr(r, "platform-sre"), "SLACK_WEBHOOK_URL"), "kubecrew-chat/slack"},
		{ref(agentCtr(r, "platform-sre"), "DISCORD_WEBHOOK_URL"), "kubecrew-chat/discord"},
		{ref(coreCtr(r), "DATABASE_URL"), "kubecrew-postgres/url"},
		{ref(coreCtr(r), "AUTH_TOKEN"), "kubecrew-secrets/AUTH_TOKEN"},
		{r.ConfigMap("kubecrew-agent").Data["GITOPS_REPO"], "acme/platform-gitops"},
		{r.ConfigMap("kubecrew-agent").Data["LLM_BASE_URL"], "https://llm.example.internal/v1"},
		{r.ConfigMap("kubecrew-agent").Data["LLM_FALLBACK_MODEL"], "gpt-4.1-mini"},
		{agentCtr(r, "platform-sre").Resources.Limits["memory"], "256Mi"},
		{agentCtr(r, "k8s-engineer").Resources.Limits["memory"], "128Mi"},
		{coreCtr(r).Resources.Limits["memory"], "192Mi"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if d := r.Deployment("agent-backend-architect"); d != nil {
		t.Errorf("Ada is disabled but %s is rendered", d.Ref())
	}
	for _, h := range r.All {
		if strings.Contains(fmt.Sprint(h.Metadata), "backend-architect") {
			t.Errorf("Ada is disabled but %s names her", h.Ref())
		}
	}
	for _, role := range r.Roles {
		for _, rule := range role.Rules {
			for _, n := range rule.ResourceNames {
				if strings.HasSuffix(n, "backend-architect") {
					t.Errorf("%s: Ada is disabled but her Lease %s is granted", role.Ref(), n)
				}
			}
		}
	}
}

// kustomizeHash is the content hash kustomize appends to generated ConfigMaps.
var kustomizeHash = regexp.MustCompile(`\b(kubecrew-agent|kubecrew-core-routes|kubecrew-core)-[a-z0-9]{10}\b`)

// helmOnly are what the chart adds to every object on purpose: Helm's
// labels and the config checksum that rolls pods on a config change (the
// kustomize base gets that from the ConfigMaps' hashed names).
var helmOnly = map[string]bool{
	"app.kubernetes.io/managed-by": true, "app.kubernetes.io/instance": true,
	"app.kubernetes.io/version": true, "helm.sh/chart": true, "checksum/config": true,
}

// objects decodes a render into generic objects keyed Kind/namespace/name,
// with kustomize's hashes and Helm's own labels taken out.
func objects(t *testing.T, manifest string) map[string]map[string]any {
	t.Helper()
	manifest = kustomizeHash.ReplaceAllString(manifest, "$1")
	out := map[string]map[string]any{}
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatal(err)
		}
		if o == nil {
			continue
		}
		stripHelmOnly(o)
		md, _ := o["metadata"].(map[string]any)
		if kind, _ := o["kind"].(string); clusterScoped(kind) {
			delete(md, "namespace") // kustomize sets it on kinds it does not know; the API server ignores it
		}
		pinnedImage(o)
		key := fmt.Sprintf("%v/%v/%v", o["kind"], md["namespace"], md["name"])
		out[key] = o
	}
	return out
}

// pinnedImage takes out the one difference the chart makes on purpose in
// every container: the base runs :latest (an overlay pins it), the chart its
// appVersion with imagePullPolicy IfNotPresent, as Helm charts do.
func pinnedImage(v any) {
	switch x := v.(type) {
	case map[string]any:
		if img, ok := x["image"].(string); ok && strings.HasPrefix(img, "ghcr.io/kubecrew/kubecrew:") {
			x["image"] = "ghcr.io/kubecrew/kubecrew"
			if x["imagePullPolicy"] == "IfNotPresent" {
				delete(x, "imagePullPolicy")
			}
		}
		for _, e := range x {
			pinnedImage(e)
		}
	case []any:
		for _, e := range x {
			pinnedImage(e)
		}
	}
}

func stripHelmOnly(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "labels" || k == "annotations" {
				if m, ok := e.(map[string]any); ok {
					for l := range m {
						if helmOnly[l] {
							delete(m, l)
						}
					}
					if len(m) == 0 {
						delete(x, k)
					}
					continue
				}
			}
			stripHelmOnly(e)
		}
	case []any:
		for _, e := range x {
			stripHelmOnly(e)
		}
	}
}

// diff lists where a and b differ, by path.
func diff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			out = append(out, diff(path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok && strings.HasSuffix(path, ".expression") && strings.Join(strings.Fields(as), " ") == strings.Join(strings.Fields(bs), " ") {
		// CEL: kustomize re-folds a folded scalar's more-indented lines
		// (one blank line more); whitespace is not significant there.
		return nil
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s: kustomize %v, helm %v", path, a, b)}
	}
	return nil
}

// TestHelmMatchesKustomize: with its defaults the chart renders the base's
// objects, field for field (comments aside), except the Namespace, which
// `helm install --create-namespace` makes (namespace.create renders it; the
// full values do, and it must then equal the base's).
func TestHelmMatchesKustomize(t *testing.T) {
	t.Parallel()
	kust := objects(t, string(renderBytes(t, target{name: "base", dir: "base"})))
	_, def := helmRender(t, helmCases[0])
	helm := objects(t, def.Manifest)
	_, full := helmRender(t, helmCases[1])
	if ns, want := objects(t, full.Manifest)["Namespace/<nil>/kubecrew"], kust["Namespace/<nil>/kubecrew"]; ns == nil {
		t.Error("namespace.create: true renders no Namespace")
	} else {
		for _, d := range diff("Namespace", want, ns) {
			t.Error(d)
		}
	}
	delete(kust, "Namespace/<nil>/kubecrew")
	// The one difference taken out above: the chart's image is its appVersion.
	chartYAML, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil || meta.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %v", err)
	}
	if want := "image: ghcr.io/kubecrew/kubecrew:" + meta.AppVersion + "\n"; strings.Count(def.Manifest, want) != 6 {
		t.Errorf("the default render has %d containers with %q, want 6", strings.Count(def.Manifest, want), want)
	}
	if n := sameObjects(t, kust, helm); n < 20 {
		t.Errorf("only %d objects compared; the base renders more", n)
	}
}

// chartOnly are the objects only the chart renders: the fleet's alerts and
// dashboard (components/monitoring brings the scraping alone).
var chartOnly = map[string]bool{"PrometheusRule/kubecrew/kubecrew": true, "ConfigMap/kubecrew/kubecrew-dashboard": true}

// TestHelmMonitoringMatchesKustomize: with monitoring.serviceMonitor and
// monitoring.allowScrape on at their defaults, the chart renders what the
// base with components/monitoring does (the ServiceMonitors, the agents'
// NetworkPolicy with the scraper's rule), and the same RBAC.
func TestHelmMonitoringMatchesKustomize(t *testing.T) {
	t.Parallel()
	kust := objects(t, string(renderBytes(t, target{name: "components/monitoring", component: "components/monitoring"})))
	delete(kust, "Namespace/<nil>/kubecrew")
	_, rel := helmRender(t, helmCases[2])
	helm := objects(t, rel.Manifest)
	for k := range chartOnly {
		if helm[k] == nil {
			t.Errorf("%s: not rendered with %s", k, helmCases[2].values)
		}
		delete(helm, k)
	}
	if kust["ServiceMonitor/kubecrew/kubecrew-agents"] == nil {
		t.Fatal("components/monitoring renders no ServiceMonitor kubecrew-agents")
	}
	if n := sameObjects(t, kust, helm); n < 22 {
		t.Errorf("only %d objects compared", n)
	}
}

// sameObjects reports every object rendered by one and not the other and
// every field that differs; it returns how many objects it compared.
func sameObjects(t *testing.T, kust, helm map[string]map[string]any) int {
	t.Helper()
	var keys []string
	for k := range kust {
		keys = append(keys, k)
	}
	for k := range helm {
		if kust[k] == nil {
			t.Errorf("%s: rendered by the chart, not by kustomize", k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := helm[k]
		if h == nil {
			t.Errorf("%s: rendered by kustomize, not by the chart", k)
			continue
		}
		for _, d := range diff(k, kust[k], h) {
			t.Error(d)
		}
	}
	return len(keys)
}

// TestHelmRBACMatchesKustomize: the same Roles, rules and bindings from
// both, so the authorizer checks hack/manifests-check.sh runs on the base
// hold for the chart (it runs them on the chart's renders too).
func TestHelmRBACMatchesKustomize(t *testing.T) {
	t.Parallel()
	kust := render(t, target{name: "base", dir: "base"})
	helm, _ := helmRender(t, helmCases[0])
	rbac := func(r *Render) []string {
		var out []string
		for _, role := range r.Roles {
			for _, rule := range role.Rules {
				out = append(out, fmt.Sprintf("%s %s/%s: %v %v %v %v", role.Kind, role.Metadata.Namespace, role.Metadata.Name,
					rule.APIGroups, rule.Resources, rule.ResourceNames, rule.Verbs))
			}
		}
		for _, b := range r.Bindings {
			for _, s := range b.Subjects {
				out = append(out, fmt.Sprintf("%s %s/%s: %s/%s → %s %s/%s", b.Kind, b.Metadata.Namespace, b.Metadata.Name,
					b.RoleRef.Kind, b.RoleRef.Name, s.Kind, s.Namespace, s.Name))
			}
		}
		sort.Strings(out)
		return out
	}
	k, h := rbac(kust), rbac(helm)
	if len(k) < 10 {
		t.Fatalf("the base renders only %d RBAC rules and subjects", len(k))
	}
	if strings.Join(k, "\n") != strings.Join(h, "\n") {
		t.Errorf("RBAC differs\nkustomize:\n  %s\nhelm:\n  %s", strings.Join(k, "\n  "), strings.Join(h, "\n  "))
	}
}

// renderBytes is the raw kustomize output of a target.
func renderBytes(t *testing.T, tg target) []byte {
	t.Helper()
	render(t, tg)
	b, _ := renderCache.Load(tg.name)
	return b.([]byte)
}

// TestHelmLint runs Helm's linter with each case's values, and proves it
// catches a broken template.
func TestHelmLint(t *testing.T) {
	t.Parallel()
	for _, hc := range helmCases {
		msgs, err := helmchart.Lint(chartDir, "kubecrew", helmValues(t, hc.values))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			t.Errorf("%s: %s", hc.name, m)
		}
	}
	broken := t.TempDir()
	if err := os.CopyFS(broken, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(broken, "templates", "core.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(strings.Replace(string(b), "{{ .Values.core.replicas }}", "{{ .Values.core.replicas ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs, err := helmchart.Lint(broken, "kubecrew", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), "core.yaml") {
		t.Errorf("lint of a broken core.yaml: %q, want an error naming it", msgs)
	}
}

package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kubecrew/kubecrew/manifests/helmchart"
	"github.com/kubecrew/kubecrew/manifests/promqlcheck"
)

// promRule is the part of a PrometheusRule the checks read.
type promRule struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	} `yaml:"spec"`
}

// kubeStateMetrics are the kube-state-metrics series the rules use, with
// their labels (its docs, "Deployment Metrics").
var kubeStateMetrics = map[string][]string{
	"kube_deployment_spec_replicas":             {"namespace", "deployment"},
	"kube_deployment_status_replicas_available": {"namespace", "deployment"},
}

// scrapeLabels are the target labels the Prometheus Operator gives every
// series a ServiceMonitor scrapes (namespace, service, pod, container,
// endpoint = the port's name, job, instance).
var scrapeLabels = []string{"namespace", "service", "pod", "container", "endpoint", "job", "instance"}

// fleetChecker knows every series the binaries register, read from their
// Go source (pkg/ and services/, tests excluded; each binary with its own
// WrapRegistererWith labels), and the kube-state-metrics series above.
func fleetChecker(t *testing.T) promqlcheck.Checker {
	t.Helper()
	all, err := fleetSeries()
	if err != nil {
		t.Fatal(err)
	}
	return promqlcheck.Checker{Series: all, Target: scrapeLabels}
}

// fleetSeries reads the binaries' sources once per test binary (the
// tests that check queries share it; nothing adds to it afterwards).
var fleetSeries = sync.OnceValues(func() (promqlcheck.Metrics, error) {
	all := promqlcheck.Metrics{}
	for _, bin := range []string{"agent", "core"} {
		m, err := promqlcheck.ScanGo(filepath.Join(repoRoot, "services", bin), filepath.Join(repoRoot, "pkg"))
		if err != nil {
			return nil, err
		}
		all.Merge(m)
	}
	for s, ls := range kubeStateMetrics {
		all.Add(s, ls...)
	}
	return all, nil
})

// grafanaVars are Grafana's own range variables, given a value so the
// expression parses as Prometheus will receive it.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// query is one PromQL expression of the chart and where it is.
type query struct{ where, expr string }

// labelValues is a Grafana variable's query, label_values(series, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// monitoringQueries reads every expression of a render's PrometheusRule
// (and its alerts' runbook_url) and of the dashboard: panel targets, and
// template variables as the query Grafana sends for them.
func monitoringQueries(t *testing.T, manifest string, dashboard []byte) ([]query, map[string]string) {
	t.Helper()
	var out []query
	alerts := map[string]string{} // alert → runbook_url
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	for {
		var pr promRule
		if err := dec.Decode(&pr); err != nil {
			break
		}
		if pr.Kind != "PrometheusRule" {
			continue
		}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
					t.Errorf("%s: severity %q (the kubecrew Alertmanager route takes warning|critical)", r.Alert, r.Labels["severity"])
				}
				out = append(out, query{"alert " + r.Alert, r.Expr})
				alerts[r.Alert] = r.Annotations["runbook_url"]
			}
		}
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dashboard, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{fmt.Sprintf("dashboard panel %q", p.Title), grafanaVars.Replace(tg.Expr)})
		}
	}
	for _, v := range dash.Templating.List {
		q, _ := v.Query.(string)
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("dashboard variable %s: query %q is not label_values(series, label)", v.Name, q)
			continue
		}
		out = append(out, query{"dashboard variable " + v.Name, fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
	}
	return out, alerts
}

// TestMonitoringQueries: every expression of the PrometheusRule and the
// dashboard parses with Prometheus's own parser, and every series and label
// it uses is one the binaries register (or kube-state-metrics, or the
// scrape, adds): a renamed metric or label would silently never fire. The
// scan must find the metrics docs/MANUAL.md documents, and each alert named in
// docs/RUNBOOK.md must be in the rule.
func TestMonitoringQueries(t *testing.T) {
	t.Parallel()
	c := fleetChecker(t)
	for series, label := range map[string]string{
		"kubecrew_agent_runs_total": "workflow_type", "kubecrew_core_alert_decisions_total": "decision",
		"kubecrew_agent_token_budget_left_tokens": "agent", "kubecrew_core_investigation_duration_seconds_bucket": "le",
	} {
		if !c.Series[series][label] {
			t.Fatalf("the source scan misses %s{%s} (found %d series): fix promqlcheck.ScanGo", series, label, len(c.Series))
		}
	}
	_, rel := helmRender(t, helmCase{name: "monitoring", values: "monitoring-values.yaml"})
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	queries, alerts := monitoringQueries(t, rel.Manifest, b)
	for _, a := range []string{"KubecrewAgentDown", "KubecrewRunsFailing", "KubecrewModelErrors", "KubecrewQueueGrowing", "KubecrewPostgresDegraded", "KubecrewTokenBudgetSpent"} {
		if _, ok := alerts[a]; !ok {
			t.Errorf("no alert %s in the PrometheusRule", a)
		}
	}
	used := map[string]bool{}
	for _, q := range queries {
		for _, p := range c.Check(q.expr) {
			t.Errorf("%s: %s\n  %s", q.where, p, q.expr)
		}
		for _, s := range c.Used(q.expr) {
			used[s] = true
		}
	}
	if len(queries) < 15 || len(used) < 10 {
		t.Errorf("only %d queries over %d series checked: %v", len(queries), len(used), used)
	}
}

// TestMonitoringRunbook: each alert's runbook_url is its section of
// docs/RUNBOOK.md.
func TestMonitoringRunbook(t *testing.T) {
	t.Parallel()
	_, rel := helmRender(t, helmCase{name: "monitoring", values: "monitoring-values.yaml"})
	_, alerts := monitoringQueries(t, rel.Manifest, []byte("{}"))
	runbook, err := os.ReadFile(filepath.Join(repoRoot, "docs", "RUNBOOK.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.ReplaceAll(strings.TrimSpace(h), " ", "-"))] = true
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts rendered")
	}
	for a, url := range alerts {
		_, frag, ok := strings.Cut(url, "docs/RUNBOOK.md#")
		if !ok || frag != strings.ToLower(a) || !anchors[frag] {
			t.Errorf("%s: runbook_url %q has no section ## %s in docs/RUNBOOK.md", a, url, a)
		}
	}
}

// TestMonitoringValues: each monitoring value renders its objects and
// nothing else; off (the defaults) renders none of them and the agents'
// NetworkPolicy as the base has it (a cluster without the Prometheus
// Operator refuses its kinds). NOTES warns when the alerts are on and the
// scraping is not.
func TestMonitoringValues(t *testing.T) {
	t.Parallel()
	type counts struct{ rules, monitors, dashboards, agentIngress int }
	for _, tc := range []struct {
		name, values string
		want         counts
		labels       map[string]string // on every ServiceMonitor
		warns        bool              // NOTES: the alerts would read nothing
	}{
		{"off", "", counts{0, 0, 0, 1}, nil, false},
		{"rule", "monitoring: {prometheusRule: {enabled: true}}", counts{1, 0, 0, 1}, nil, true},
		{"rule and monitors", "monitoring: {prometheusRule: {enabled: true}, serviceMonitor: {enabled: true}}", counts{1, 2, 0, 1}, nil, true},
		{"dashboard", "monitoring: {grafanaDashboard: {enabled: true}}", counts{0, 0, 1, 1}, nil, false},
		{"service monitors", "monitoring: {serviceMonitor: {enabled: true, interval: 1m, labels: {release: prom}}}", counts{0, 2, 0, 1}, map[string]string{"release": "prom"}, false},
		{"allow scrape", "monitoring: {allowScrape: {enabled: true, podSelector: null, namespaceSelector: {matchLabels: {team: observability}}}}", counts{0, 0, 0, 2}, nil, false},
		{"all", "monitoring: {prometheusRule: {enabled: true}, grafanaDashboard: {enabled: true}, serviceMonitor: {enabled: true}, allowScrape: {enabled: true}}", counts{1, 2, 1, 2}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &v); err != nil {
				t.Fatal(err)
			}
			if v == nil {
				v = map[string]any{}
			}
			v["auth"] = map[string]any{"token": map[string]any{"secretName": SecretName}} // the one required value
			rel, err := helmchart.Render(context.Background(), chartDir, "kubecrew", "kubecrew", v)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse("helm/"+tc.name, []byte(rel.Manifest))
			if err != nil {
				t.Fatal(err)
			}
			var got counts
			for _, h := range r.All {
				switch {
				case h.Kind == "PrometheusRule":
					got.rules++
				case h.Kind == "ServiceMonitor":
					got.monitors++
				case h.Kind == "ConfigMap" && h.Metadata.Name == "kubecrew-dashboard":
					got.dashboards++
				}
			}
			got.agentIngress = len(agentPolicy(r).Spec.Ingress)
			if got != tc.want {
				t.Errorf("rendered %+v, want %+v", got, tc.want)
			}
			for _, sm := range r.ServiceMonitors {
				for k, v := range tc.labels {
					if sm.Metadata.Labels[k] != v {
						t.Errorf("%s: label %s=%q, want %q", sm.Ref(), k, sm.Metadata.Labels[k], v)
					}
				}
			}
			if w := strings.Contains(rel.Notes, "WARNING: the fleet's alerts"); w != tc.warns {
				t.Errorf("NOTES warns that nothing is scraped: %v, want %v\n%s", w, tc.warns, rel.Notes)
			}
			want := Expectations{CoreReplicas: 2, ServiceMonitors: tc.want.monitors > 0, ScrapeFrom: tc.want.agentIngress > 1}
			for _, p := range Check(r, want, loadContract(t)) {
				t.Error(p)
			}
		})
	}
}

// TestMonitoringLabelsSurviveTheScrape: the ServiceMonitors honor the
// binaries' labels (honorLabels, checkServiceMonitors), so a kubecrew
// series' own label named like a target label replaces the target's. Only
// `endpoint` may (the model or agent endpoint: the target's would be the
// port name); an own namespace, pod, job or instance would move a series
// out of the namespace the rules and the dashboard select by.
func TestMonitoringLabelsSurviveTheScrape(t *testing.T) {
	t.Parallel()
	c := fleetChecker(t)
	collide := 0
	for s, own := range c.Series {
		if _, external := kubeStateMetrics[s]; external {
			continue
		}
		for _, l := range scrapeLabels {
			if !own[l] {
				continue
			}
			if l != "endpoint" {
				t.Errorf("%s has its own %q label: with honorLabels it replaces the scrape's (rename it)", s, l)
			}
			collide++
		}
	}
	if collide == 0 {
		t.Error("no series has its own endpoint label: honorLabels is no longer needed, or the scan misses kubecrew_agent_model_requests_total")
	}
}

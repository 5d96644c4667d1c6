package manifests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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

var (
	// metricRef is a kubecrew series name in a PromQL expression.
	metricRef = regexp.MustCompile(`\bkubecrew_[a-z0-9_]+\b`)
	// fullName is a metric registered under its full name in Go source.
	fullName = regexp.MustCompile(`Name:\s*"(kubecrew_[a-z0-9_]+)"`)
	// partName is a Name: next to Namespace/Subsystem constants.
	partName   = regexp.MustCompile(`Name:\s*"([a-z0-9_]+)"`)
	nsSubConst = regexp.MustCompile(`namespace, subsystem\s*=\s*"([a-z]+)",\s*"([a-z_]+)"`)
)

// codeMetrics lists every metric name the binaries register, read from the
// Go source of pkg/ and services/ (tests excluded): Name: "kubecrew_…", or a
// Name: in a file with namespace and subsystem constants (the core's).
func codeMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dir := range []string{"pkg", "services"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range fullName.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			if c := nsSubConst.FindStringSubmatch(string(b)); c != nil {
				for _, m := range partName.FindAllStringSubmatch(string(b), -1) {
					out[c[1]+"_"+c[2]+"_"+m[1]] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// seriesName maps a histogram's series to its metric.
func seriesName(s string) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(s, suf); ok {
			return base
		}
	}
	return s
}

func balanced(expr string) bool {
	depth := map[rune]int{}
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	inStr := false
	for _, r := range expr {
		switch {
		case r == '"':
			inStr = !inStr
		case inStr:
		case r == '(' || r == '{' || r == '[':
			depth[r]++
		case pairs[r] != 0:
			depth[pairs[r]]--
			if depth[pairs[r]] < 0 {
				return false
			}
		}
	}
	return !inStr && depth['('] == 0 && depth['{'] == 0 && depth['['] == 0
}

// TestMonitoringUsesRealMetrics: every kubecrew_ series the PrometheusRule
// and the dashboard query is a metric the code registers (a renamed metric
// would silently never fire), each alert has a runbook section, and the
// scanner itself finds the metrics README.md documents.
func TestMonitoringUsesRealMetrics(t *testing.T) {
	t.Parallel()
	code := codeMetrics(t)
	for _, known := range []string{"kubecrew_agent_runs_total", "kubecrew_core_alert_decisions_total", "kubecrew_agent_token_budget_left_tokens"} {
		if !code[known] {
			t.Fatalf("the source scan misses %s (found %d names): fix codeMetrics", known, len(code))
		}
	}
	_, rel := helmRender(t, helmCase{name: "monitoring", values: "monitoring-values.yaml"})
	var exprs []string
	alerts := map[string]string{} // alert → runbook_url
	dec := yaml.NewDecoder(strings.NewReader(rel.Manifest))
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
				if !balanced(r.Expr) {
					t.Errorf("%s: unbalanced expression %s", r.Alert, r.Expr)
				}
				if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
					t.Errorf("%s: severity %q (the kubecrew Alertmanager route takes warning|critical)", r.Alert, r.Labels["severity"])
				}
				exprs = append(exprs, r.Expr)
				alerts[r.Alert] = r.Annotations["runbook_url"]
			}
		}
	}
	wantAlerts := []string{"KubecrewAgentDown", "KubecrewRunsFailing", "KubecrewModelErrors", "KubecrewQueueGrowing", "KubecrewPostgresDegraded", "KubecrewTokenBudgetSpent"}
	for _, a := range wantAlerts {
		if _, ok := alerts[a]; !ok {
			t.Errorf("no alert %s in the PrometheusRule", a)
		}
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if !balanced(tg.Expr) {
				t.Errorf("dashboard panel %q: unbalanced expression %s", p.Title, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricRef.FindAllString(e, -1) {
			used[seriesName(m)] = true
		}
	}
	if len(used) < 8 {
		t.Errorf("only %d kubecrew metrics used: %v", len(used), used)
	}
	var missing []string
	for m := range used {
		if !code[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is queried but no code registers it", m)
	}
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
	for a, url := range alerts {
		_, frag, ok := strings.Cut(url, "docs/RUNBOOK.md#")
		if !ok || frag != strings.ToLower(a) || !anchors[frag] {
			t.Errorf("%s: runbook_url %q has no section ## %s in docs/RUNBOOK.md", a, url, a)
		}
	}
}

// TestMonitoringOffByDefault: the defaults render neither (the base has
// neither, and a cluster without the Prometheus Operator refuses the CRD).
func TestMonitoringOffByDefault(t *testing.T) {
	t.Parallel()
	_, rel := helmRender(t, helmCases[0])
	for _, s := range []string{"kind: PrometheusRule", "kubecrew-dashboard"} {
		if strings.Contains(rel.Manifest, s) {
			t.Errorf("the default render contains %s", s)
		}
	}
}

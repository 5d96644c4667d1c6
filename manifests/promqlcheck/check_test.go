package promqlcheck

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fleet is a small set of series shaped like the binaries' (docs/MANUAL.md,
// "Metrics and logs").
func fleet() Checker {
	m := Metrics{}
	m.Add("kubecrew_agent_runs_total", "agent", "workflow_type", "status")
	m.Add("kubecrew_core_store_errors_total", "op")
	m.Add("kubecrew_core_investigation_duration_seconds_bucket", "agent", "le")
	m.Add("kube_deployment_spec_replicas", "namespace", "deployment")
	return Checker{Series: m, Target: []string{"namespace", "pod", "job"}}
}

// TestCheck: good expressions pass; each planted mistake is reported, naming
// what is wrong.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expr string
		want       []string // substrings, one per expected problem; none = clean
	}{
		{"rate by agent", `sum by (namespace, agent) (rate(kubecrew_agent_runs_total{status="failed"}[30m])) > 0`, nil},
		{"ratio and on", `(sum by (agent) (rate(kubecrew_agent_runs_total{status="failed"}[5m])) / sum by (agent) (rate(kubecrew_agent_runs_total[5m]))) > 0.5 and on (agent) sum by (agent) (increase(kubecrew_agent_runs_total[30m])) >= 3`, nil},
		{"histogram quantile", `histogram_quantile(0.9, sum by (agent, le) (rate(kubecrew_core_investigation_duration_seconds_bucket[5m])))`, nil},
		{"target label", `kubecrew_core_store_errors_total{namespace="kubecrew", pod=~"core-.+"}`, nil},
		{"without", `sum without (pod) (kubecrew_core_store_errors_total)`, nil},
		{"label_replace", `sum by (persona) (label_replace(kubecrew_agent_runs_total, "persona", "$1", "agent", "(.+)"))`, nil},
		{"grafana variable in a value", `kubecrew_agent_runs_total{namespace="$namespace"}`, nil},
		{"unbalanced", `sum(rate(kubecrew_agent_runs_total[5m])`, []string{"does not parse"}},
		{"bad range", `rate(kubecrew_agent_runs_total[5x])`, []string{"does not parse"}},
		{"unknown function", `rates(kubecrew_agent_runs_total[5m])`, []string{"does not parse"}},
		{"range where an instant is wanted", `sum(kubecrew_agent_runs_total[5m])`, []string{"does not parse"}},
		{"renamed metric", `rate(kubecrew_agent_run_total[5m])`, []string{`series "kubecrew_agent_run_total"`}},
		{"misspelt selector label", `kubecrew_agent_runs_total{stauts="failed"}`, []string{`label "stauts"`}},
		{"by a label the series lack", `sum by (outcome) (kubecrew_agent_runs_total)`, []string{`sum by (…): label "outcome"`}},
		{"by a label an inner sum dropped", `max by (status) (sum by (agent) (kubecrew_agent_runs_total))`, []string{`max by (…): label "status"`}},
		{"on a label one side lacks", `kubecrew_agent_runs_total and on (op) kubecrew_core_store_errors_total`, []string{`and on (…) left side: label "op"`}},
		{"group_left a label the one side lacks", `kubecrew_agent_runs_total * on (namespace) group_left (version) kube_deployment_spec_replicas`, []string{`group_left (…): label "version"`}},
		{"two mistakes", `sum by (agnet) (kubecrew_agent_runs_total{stats="ok"})`, []string{`label "stats"`, `label "agnet"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := fleet().Check(tc.expr)
			if len(got) != len(tc.want) {
				t.Fatalf("Check(%s) = %q, want %d problem(s) naming %q", tc.expr, got, len(tc.want), tc.want)
			}
			sort.Strings(got)
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || strings.Contains(g, w)
				}
				if !found {
					t.Errorf("Check(%s) = %q, want one naming %q", tc.expr, got, w)
				}
			}
		})
	}
}

// TestScanGo: the scan reads every way the binaries register a metric, and
// refuses a call it cannot read instead of missing the metric.
func TestScanGo(t *testing.T) {
	t.Parallel()
	got, err := ScanGo("testdata/metrics/ok")
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{}
	want.Add("kubecrew_demo_decisions_total", "agent", "decision")
	want.Add("kubecrew_demo_duration_seconds_bucket", "agent", "workflow_type", "le")
	want.Add("kubecrew_demo_duration_seconds_sum", "agent", "workflow_type")
	want.Add("kubecrew_demo_duration_seconds_count", "agent", "workflow_type")
	want.Add("kubecrew_demo_build_info", "agent", "version")
	want.Add("kubecrew_demo_latency_seconds", "agent", "quantile")
	want.Add("kubecrew_demo_latency_seconds_sum", "agent")
	want.Add("kubecrew_demo_latency_seconds_count", "agent")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScanGo = %v\nwant %v", got, want)
	}
	_, err = ScanGo("testdata/metrics/unreadable")
	if err == nil || !strings.Contains(err.Error(), "unreadable/metrics.go:9") || !strings.Contains(err.Error(), "labels") {
		t.Errorf("ScanGo of a Vec with a variable for labels: %v, want an error naming metrics.go:9", err)
	}
}

package app_test

import (
	"strings"
	"testing"
)

// The agent's metrics are what a Prometheus user expects: every kubecrew
// series carries agent, labels say workflow_type as the API does, counters
// exist at 0 before their first event, and kubecrew_build_info is there.
func TestMetricsLabelsAndZeroSeries(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "DISCORD_WEBHOOK_URL": "https://discord.com/api/webhooks/1/x"})
	code, b := do(t, "GET", a.url+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	var kc []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "kubecrew_") {
			continue
		}
		kc = append(kc, line)
		if !strings.Contains(line, `agent="platform-sre"`) {
			t.Errorf("no agent label: %s", line)
		}
		if strings.Contains(line, `workflow="`) {
			t.Errorf("label workflow, the API says workflow_type: %s", line)
		}
	}
	for _, want := range [][]string{
		{"kubecrew_agent_runs_total{", `status="failed"`, `workflow_type="alert"`, "} 0"},
		{"kubecrew_agent_runs_total{", `status="completed"`, `workflow_type="pulse-task"`, "} 0"},
		{"kubecrew_agent_tool_calls_total{", `outcome="error"`, `tool="cluster_problems"`, "} 0"},
		{"kubecrew_agent_guard_denials_total{", `gate="execution"`, "} 0"},
		{"kubecrew_a2a_messages_total{", `direction="sent"`, `outcome="refused"`, `verb="delegate"`, "} 0"},
		{"kubecrew_pulse_ticks_total{", `outcome="error"`, "} 0"},
		{"kubecrew_report_deliveries_total{", `status="failed"`, `target="discord"`, "} 0"},
		{"kubecrew_build_info{", `binary="agent"`, `version="`, "} 1"},
	} {
		found := false
		for _, line := range kc {
			all := true
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			found = found || all
		}
		if !found {
			t.Errorf("no series with %v before any event", want)
		}
	}
}

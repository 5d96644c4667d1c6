package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// The whole agent mounts /pulse with the effective settings, behind
// AUTH_TOKEN for POST, and runs a task on demand with the timer off.
func TestPulseEndpointsOnTheWholeAgent(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "AUTH_TOKEN": "tok", "PULSE_INTERVAL": "30m", "RUN_TIMEOUT": "600s"})
	code, b := do(t, http.MethodGet, a.url+"/pulse", "", "Authorization", "Bearer tok")
	if code != http.StatusOK {
		t.Fatalf("GET /pulse = %d %s", code, b)
	}
	var st pulse.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	// Sol's agent.env turns the timer off; the timeout is min(30m/2, RUN_TIMEOUT).
	if st.Agent != "k8s-engineer" || st.Enabled || st.Interval != "30m0s" || st.Timeout != "10m0s" || len(st.Tasks) != 1 || st.Tasks[0].Cadence != pulse.Weekly {
		t.Errorf("status = %s", b)
	}
	if code, b := do(t, http.MethodPost, a.url+"/pulse", ""); code != http.StatusUnauthorized {
		t.Errorf("POST /pulse without the token = %d %s", code, b)
	}
	code, b = do(t, http.MethodPost, a.url+"/pulse", "", "Authorization", "Bearer tok")
	var res pulse.TickResult
	_ = json.Unmarshal(b, &res)
	if code != http.StatusOK || res.Outcome != pulse.OutcomeRan || res.Result == nil || res.Result.WorkflowType != "pulse-task" {
		t.Fatalf("POST /pulse = %d %s", code, b)
	}
	// Ran once: the weekly task is no longer due.
	code, b = do(t, http.MethodPost, a.url+"/pulse", "", "Authorization", "Bearer tok")
	if code != http.StatusOK || !strings.Contains(string(b), `"outcome":"nothing_due"`) {
		t.Errorf("second POST /pulse = %d %s", code, b)
	}
	if code, b := do(t, http.MethodGet, a.url+"/metrics", ""); !strings.Contains(string(b), `kubecrew_pulse_ticks_total{agent="k8s-engineer",outcome="nothing_due"} 1`) ||
		!strings.Contains(string(b), `kubecrew_pulse_task_runs_total{agent="k8s-engineer",cadence="weekly",status="completed"} 1`) {
		t.Errorf("metrics (%d) lack the pulse counters", code)
	}
}

func TestPulseTimeoutMustFitTheInterval(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "vera", "PULSE_INTERVAL": "10m", "PULSE_TIMEOUT": "10m"}
	cfg, err := config.Load(envOf(env), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.New(context.Background(), cfg, app.Options{})
	if err == nil || !strings.Contains(err.Error(), "PULSE_TIMEOUT") || !strings.Contains(err.Error(), "PULSE_INTERVAL") {
		t.Fatalf("app.New = %v, want a PULSE_TIMEOUT error", err)
	}
	// The same with the timer off is fine: POST /pulse uses the timeout only.
	env["PULSE_ENABLED"] = "false"
	cfg, _ = config.Load(envOf(env), app.LoadPersona)
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Shutdown(context.Background())
}

func TestPulseTimeoutDefault(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PULSE_INTERVAL": "45m"}, "20m0s"},                                             // min(22m30s, RUN_TIMEOUT 1200s)
		{map[string]string{"PULSE_INTERVAL": "30m"}, "15m0s"},                                             // half the interval
		{map[string]string{"PULSE_INTERVAL": "2h", "PULSE_TIMEOUT": "5m"}, "5m0s"},                        // explicit
		{map[string]string{"PULSE_INTERVAL": "2h", "PULSE_TIMEOUT": "50m", "RUN_TIMEOUT": "1h"}, "50m0s"}, // above the default RUN_TIMEOUT: refused (config)
	}
	for _, c := range cases {
		c.env["AGENT_PERSONA"] = "dax"
		cfg, err := config.Load(envOf(c.env), app.LoadPersona)
		if err != nil {
			t.Fatal(err)
		}
		if got := app.PulseTimeout(cfg).String(); got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
}

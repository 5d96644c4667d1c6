package app_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// Typos in the environment, settings without effect and persona warnings
// (an unknown PULSE.md section) are logged at start and listed in /info.
func TestConfigurationWarningsAreLoggedAndListed(t *testing.T) {
	dir := t.TempDir()
	for p, body := range map[string]string{
		"noor/AGENTS.md": "# Noor\n", "noor/Identity.md": "watchtower\n", "noor/agent.env": "AGENT_TOOLS=load_skill\n",
		"noor/PULSE.md": "## Continuous\n- sweep the cluster\n\n## Hourly\n- look again\n",
	} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"AGENT_PERSONA": "noor", "PERSONA_DIR": dir, "LLM_API_KEY": "k"}
	cfg, err := config.Load(envOf(env), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CheckEnviron([]string{"AGENT_PERSONA=noor", "AGENT_TOOL=k8s_describe", "PULSE_ENABLE=false", "HOME=/root"})
	core, logs := observer.New(zap.WarnLevel)
	a, err := app.New(context.Background(), cfg, app.Options{Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		srv.Close()
	})
	wants := []string{"AGENT_TOOL is not a setting (did you mean AGENT_TOOLS?)", "PULSE_ENABLE is not a setting (did you mean PULSE_ENABLED?)",
		"LLM_API_KEY is set without LLM_BASE_URL", "Hourly"}
	var logged []string
	for _, e := range logs.All() {
		logged = append(logged, e.Message)
	}
	for _, w := range wants {
		if !strings.Contains(strings.Join(logged, "\n"), w) {
			t.Errorf("start-up log lacks %q:\n%s", w, strings.Join(logged, "\n"))
		}
	}
	_, body := do(t, "GET", srv.URL+"/info", "")
	var info app.Info
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.UnknownSettings) != 2 || info.UnknownSettings[0].Name != "AGENT_TOOL" || info.UnknownSettings[0].DidYouMean != "AGENT_TOOLS" {
		t.Errorf("unknown_settings = %+v", info.UnknownSettings)
	}
	if joined := strings.Join(info.Warnings, "\n"); !strings.Contains(joined, "Hourly") || !strings.Contains(joined, "LLM_API_KEY") {
		t.Errorf("warnings = %q", info.Warnings)
	}
}

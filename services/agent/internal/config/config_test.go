package config_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

func loader(env string) func(dir, name string) (*persona.Persona, error) {
	fs := fstest.MapFS{
		"sol/AGENTS.md":   {Data: []byte("# Sol\n")},
		"sol/Identity.md": {Data: []byte("actor\n")},
		"sol/agent.env":   {Data: []byte(env)},
	}
	return func(dir, name string) (*persona.Persona, error) { return persona.Load(fs, name) }
}

func TestPrecedenceDefaultPersonaEnv(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "sol", "LLM_TIMEOUT": "30s", "DATABASE_URL": "postgres://u:pw@db:5432/kc"}
	c, err := config.Load(getenv(env), loader("# defaults\nAGENT_MAX_ITERATIONS=12\nLLM_TIMEOUT=100s\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings()
	for _, tc := range []struct{ name, value, source, where string }{
		{"TOOL_OUTPUT_MAX_CHARS", "8000", "default", ""},
		{"AGENT_MAX_ITERATIONS", "12", "persona", "sol/agent.env:2"},
		{"LLM_TIMEOUT", "30s", "env", ""},
		{"AGENT_PERSONA", "k8s-engineer", "env", ""},
		{"AGENT_MODEL", "none", "default", ""},
	} {
		if got := s[tc.name]; got.Value != tc.value || got.Source != tc.source || got.Where != tc.where {
			t.Errorf("%s = %+v, want %s from %s %s", tc.name, got, tc.value, tc.source, tc.where)
		}
	}
	if v := s["DATABASE_URL"].Value; strings.Contains(v, "pw") || !strings.Contains(v, "db:5432") {
		t.Errorf("DATABASE_URL shown as %q", v)
	}
	if !c.Deterministic() || c.MaxIterations != 12 || c.LLMTimeout.Seconds() != 30 || c.ToolOutputMaxChars != 8000 {
		t.Error("typed getters disagree with the settings")
	}
}

func TestPersonaValuesAreValidatedWithFileAndLine(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"PULSE_INTERVAL=soon\n", "PULSE_INTERVAL (sol/agent.env:1)"},
		{"\nAGENT_PERSONA=noor\n", "AGENT_PERSONA (sol/agent.env:2)"},
		{"NOT_A_SETTING=1\n", "NOT_A_SETTING (sol/agent.env:1): unknown setting"},
		{"GITOPS_FORGE=gitlab\n", "GITOPS_FORGE"},
	} {
		_, err := config.Load(getenv(map[string]string{"AGENT_PERSONA": "sol"}), loader(tc.env))
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("agent.env %q: err = %v, want %q", tc.env, err, tc.want)
		}
	}
}

func TestPeers(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "sol", "AGENT_PEERS": "noor=http://127.0.0.1:8001/, code-reviewer=http://127.0.0.1:8003"}
	c, err := config.Load(getenv(env), loader(""))
	if err != nil {
		t.Fatal(err)
	}
	p := c.StaticPeers
	if p["platform-sre"] != "http://127.0.0.1:8001" || p["code-reviewer"] != "http://127.0.0.1:8003" || len(p) != 2 {
		t.Errorf("peers = %v", p)
	}
}

func TestModelSelection(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "sol", "LLM_BASE_URL": "http://127.0.0.1:11434/v1", "AGENT_MODEL": "qwen3"}
	c, err := config.Load(getenv(env), loader(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.Deterministic() {
		t.Error("a model and an endpoint should select model mode")
	}
}

// Values are parsed once, typed; a malformed environment value is refused
// naming the variable and that it came from the environment.
func TestValuesAreTypedAndMalformedOnesRefused(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "sol", "PULSE_ENABLED": "true", "AGENT_TEMPERATURE": "0.5",
		"AGENT_TOOLS": " k8s_describe , ,k8s_get_events", "RETENTION": "7d", "MAX_SOCIAL_DEPTH": "3"}
	c, err := config.Load(getenv(env), loader(""))
	if err != nil {
		t.Fatal(err)
	}
	if !c.PulseEnabled || c.Temperature != 0.5 || c.MaxSocialDepth != 3 || c.Retention.Hours() != 7*24 ||
		strings.Join(c.Tools, "|") != "k8s_describe|k8s_get_events" || c.RunTimeout.Seconds() != 1200 {
		t.Errorf("values = %+v", c.Values)
	}
	for name, bad := range map[string]string{"MAX_SOCIAL_DEPTH": "five", "AGENT_TEMPERATURE": "warm", "PULSE_ENABLED": "yes please",
		"RUN_TIMEOUT": "-1s", "LLM_BASE_URL": "localhost:11434"} {
		e := map[string]string{"AGENT_PERSONA": "sol", name: bad}
		_, err := config.Load(getenv(e), loader(""))
		if err == nil || !strings.HasPrefix(err.Error(), name+" (environment)") {
			t.Errorf("%s=%q: err = %v, want it refused naming %s (environment)", name, bad, err, name)
		}
	}
}

// The token budget: defaults, malformed values refused, and a run ceiling
// above the day's refused naming both.
func TestTokenBudgetSettings(t *testing.T) {
	env := map[string]string{"AGENT_PERSONA": "sol"}
	c, err := config.Load(getenv(env), loader(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenBudget != 2000000 || c.RunTokenBudget != 200000 {
		t.Errorf("defaults: day %d run %d", c.TokenBudget, c.RunTokenBudget)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENT_TOKEN_BUDGET": "-5"}, "AGENT_TOKEN_BUDGET (environment)"},
		{map[string]string{"AGENT_RUN_TOKEN_BUDGET": "lots"}, "AGENT_RUN_TOKEN_BUDGET (environment)"},
		{map[string]string{"AGENT_TOKEN_BUDGET": "50000", "AGENT_RUN_TOKEN_BUDGET": "60000"}, "AGENT_RUN_TOKEN_BUDGET (environment): 60000 is more than AGENT_TOKEN_BUDGET (50000)"},
		{map[string]string{"AGENT_TOKEN_BUDGET": "0", "AGENT_RUN_TOKEN_BUDGET": "60000"}, ""},
	} {
		tc.env["AGENT_PERSONA"] = "sol"
		_, err := config.Load(getenv(tc.env), loader(""))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want %q", tc.env, err, tc.want)
		}
	}
}

// Time settings that contradict the run's budget are refused at start-up,
// naming both settings and where each value came from.
func TestContradictoryBudgetsRefusedNamingBoth(t *testing.T) {
	model := map[string]string{"LLM_BASE_URL": "http://127.0.0.1:11434/v1", "AGENT_MODEL": "qwen3"}
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = accepted
	}{
		{map[string]string{"RUN_TIMEOUT": "10s"}, "LLM_TIMEOUT: 6m40s (default) is not shorter than RUN_TIMEOUT (10s, environment)"},
		{map[string]string{"RUN_TIMEOUT": "150s", "LLM_TIMEOUT": "100s"}, "SYNTHESIS_TIMEOUT: 3m0s (default) is not shorter than RUN_TIMEOUT (2m30s, environment)"},
		{map[string]string{"RUN_TIMEOUT": "600s", "PULSE_TIMEOUT": "11m"}, "PULSE_TIMEOUT (environment): 11m0s (environment)"},
		{map[string]string{"RUN_TIMEOUT": "600s", "PULSE_TIMEOUT": "10m", "LLM_TIMEOUT": "100s", "A2A_CALL_TIMEOUT": "300s"}, ""},
		{map[string]string{"RUN_TIMEOUT": "600s"}, ""},
	} {
		env := map[string]string{"AGENT_PERSONA": "sol"}
		for k, v := range model {
			env[k] = v
		}
		for k, v := range tc.env {
			env[k] = v
		}
		_, err := config.Load(getenv(env), loader(""))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want it to contain %q", tc.env, err, tc.want)
		}
	}
	// Without a model, LLM_TIMEOUT is not used and not checked.
	env := map[string]string{"AGENT_PERSONA": "sol", "RUN_TIMEOUT": "30s"}
	if _, err := config.Load(getenv(env), loader("")); err != nil {
		t.Errorf("deterministic agent with RUN_TIMEOUT=30s refused: %v", err)
	}
}

// getenv is env with AUTH_TOKEN set unless env says otherwise: every
// agent needs one (TestAuthRequired).
func getenv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok || k != "AUTH_TOKEN" || env["AUTH_DISABLED"] != "" || env["AUTH_READ_TOKEN"] != "" {
			return v
		}
		return "test-token"
	}
}

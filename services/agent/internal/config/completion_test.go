package config_test

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// AGENT_MAX_COMPLETION_TOKENS defaults to the eighth of AGENT_CONTEXT_TOKENS
// the context budget keeps for the reply, /info says so, 0 sends no cap,
// and a cap over half the window is refused naming both settings.
func TestMaxCompletionTokens(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		want  int
		where string // of the setting, when derived
		err   string
	}{
		{env: map[string]string{}, want: 4000, where: "AGENT_CONTEXT_TOKENS/8"},
		{env: map[string]string{"AGENT_CONTEXT_TOKENS": "16000"}, want: 2000, where: "AGENT_CONTEXT_TOKENS/8"},
		{env: map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "8000"}, want: 8000},
		{env: map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "0"}, want: 0},
		{env: map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "16001"}, err: "AGENT_MAX_COMPLETION_TOKENS (environment): 16001 is more than half of AGENT_CONTEXT_TOKENS (32000)"},
		{env: map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "lots"}, err: "AGENT_MAX_COMPLETION_TOKENS (environment)"},
	} {
		tc.env["AGENT_PERSONA"] = "sol"
		c, err := config.Load(getenv(tc.env), loader(""))
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%v: err = %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if s := c.Settings()["AGENT_MAX_COMPLETION_TOKENS"]; c.MaxAnswerTokens != tc.want || s.Where != tc.where {
			t.Errorf("%v: cap %d (%+v), want %d (%s)", tc.env, c.MaxAnswerTokens, s, tc.want, tc.where)
		}
	}
}

package config_test

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// TestAuthRequired: the agent refuses to start without AUTH_TOKEN, or with
// AUTH_READ_TOKEN alone (which used to turn authentication off: issue 31,
// cases 1 and 2), naming the setting; AUTH_DISABLED=true is the one way
// in without a token, and it is warned about in a text the log redactor
// leaves whole.
func TestAuthRequired(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		warned  bool
	}{
		{"no token", map[string]string{}, "AUTH_TOKEN: is not set", false},
		{"read token alone", map[string]string{"AUTH_READ_TOKEN": "r"}, "AUTH_READ_TOKEN (environment): is set without AUTH_TOKEN", false},
		{"disabled", map[string]string{"AUTH_DISABLED": "true"}, "", true},
		{"disabled and a token", map[string]string{"AUTH_DISABLED": "true", "AUTH_TOKEN": "w"}, "AUTH_DISABLED (environment): is true but AUTH_TOKEN", false},
		{"not a bool", map[string]string{"AUTH_DISABLED": "yes please"}, "AUTH_DISABLED", false},
		{"token", map[string]string{"AUTH_TOKEN": "w"}, "", false},
		{"both tokens", map[string]string{"AUTH_TOKEN": "w", "AUTH_READ_TOKEN": "r"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["AGENT_PERSONA"] = "sol"
			c, err := config.Load(func(k string) string { return tc.env[k] }, loader(""))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warned bool
			for _, w := range c.Warnings {
				if out, _ := redact.String(w); out != w {
					t.Errorf("the log redactor mangles the warning %q into %q", w, out)
				}
				warned = warned || w == config.AuthDisabledWarning
			}
			if warned != tc.warned || c.AuthDisabled != tc.warned {
				t.Errorf("warnings %q, AuthDisabled %v; want the AUTH_DISABLED warning: %v", c.Warnings, c.AuthDisabled, tc.warned)
			}
			if got := c.Settings()["AUTH_DISABLED"].Value; got != map[bool]string{true: "true", false: "false"}[tc.warned] {
				t.Errorf("/info shows AUTH_DISABLED=%q", got)
			}
		})
	}
}

// TestAuthDisabledNotFromPersona: only the environment may turn
// authentication off, never a persona's agent.env shipped in the image.
func TestAuthDisabledNotFromPersona(t *testing.T) {
	_, err := config.Load(func(k string) string { return map[string]string{"AGENT_PERSONA": "sol"}[k] }, loader("AUTH_DISABLED=true\n"))
	if err == nil || !strings.Contains(err.Error(), "AUTH_DISABLED (sol/agent.env:1)") {
		t.Fatalf("err = %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

func TestStartupRefusesBadConfiguration(t *testing.T) {
	dir := t.TempDir()
	// A persona directory with a malformed PULSE.md and a skill without front matter.
	mk := func(p, body string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("noor/AGENTS.md", "# Noor\n")
	mk("noor/Identity.md", "watchtower\n")
	mk("noor/PULSE.md", "## Continuous\n- sweep\n  - nested bullet\n")
	mk("noor/agent.env", "AGENT_TOOLS=load_skill\n")
	dir2 := t.TempDir()
	for p, body := range map[string]string{
		"noor/AGENTS.md": "# Noor\n", "noor/Identity.md": "x\n", "noor/agent.env": "AGENT_TOOLS=load_skill\n",
		"noor/skills/health-sweep/SKILL.md": "no front matter here\n",
	} {
		full := filepath.Join(dir2, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		_ = os.WriteFile(full, []byte(body), 0o644)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"empty persona", map[string]string{}, []string{"AGENT_PERSONA", "is empty", "noor (platform-sre)"}},
		{"unknown persona", map[string]string{"AGENT_PERSONA": "bob"}, []string{"AGENT_PERSONA", `unknown persona "bob"`}},
		{"unknown tool", map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "kubectl_apply"}, []string{"AGENT_TOOLS (environment)", `unknown tool "kubectl_apply"`}},
		{"bad duration", map[string]string{"AGENT_PERSONA": "sol", "LLM_TIMEOUT": "forever"}, []string{"LLM_TIMEOUT", `"forever" is not a duration`}},
		{"bad number", map[string]string{"AGENT_PERSONA": "sol", "AGENT_MAX_ITERATIONS": "ten"}, []string{"AGENT_MAX_ITERATIONS", "not a non-negative whole number"}},
		{"bad bool", map[string]string{"AGENT_PERSONA": "sol", "PULSE_ENABLED": "yes please"}, []string{"PULSE_ENABLED"}},
		{"bad url", map[string]string{"AGENT_PERSONA": "sol", "LLM_BASE_URL": "localhost:11434"}, []string{"LLM_BASE_URL", "not an http(s) URL"}},
		{"bad peers", map[string]string{"AGENT_PERSONA": "sol", "AGENT_PEERS": "bob=http://x"}, []string{"AGENT_PEERS", `unknown agent "bob"`}},
		{"malformed PULSE.md", map[string]string{"AGENT_PERSONA": "noor", "PERSONA_DIR": dir}, []string{"PULSE.md:3", "nested"}},
		{"skill without front matter", map[string]string{"AGENT_PERSONA": "noor", "PERSONA_DIR": dir2}, []string{"SKILL.md:1", "front matter"}},
		{"model endpoint without a model", map[string]string{"AGENT_PERSONA": "sol", "LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, []string{"AGENT_MODEL", "LLM_BASE_URL is set but AGENT_MODEL is not"}},
		{"model without an endpoint", map[string]string{"AGENT_PERSONA": "sol", "AGENT_MODEL": "qwen3"}, []string{"AGENT_MODEL=qwen3 but LLM_BASE_URL is not set"}},
		{"missing persona dir", map[string]string{"AGENT_PERSONA": "noor", "PERSONA_DIR": "/nonexistent"}, []string{"PERSONA_DIR", "/nonexistent"}},
		// Closed by default (issue 31, cases 1 and 2).
		{"no token", map[string]string{"AGENT_PERSONA": "sol", "AUTH_TOKEN": ""}, []string{"AUTH_TOKEN: is not set", "AUTH_DISABLED=true"}},
		{"read token alone", map[string]string{"AGENT_PERSONA": "sol", "AUTH_TOKEN": "", "AUTH_READ_TOKEN": "r"}, []string{"AUTH_READ_TOKEN (environment): is set without AUTH_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			getenv := func(k string) string {
				if v, ok := tc.env[k]; ok || k != "AUTH_TOKEN" {
					return v
				}
				return "t" // every case but the token's own has one
			}
			code := run(context.Background(), nil, getenv, nil, &stderr, &stderr)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr: %s", code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

func TestStartsAndStopsCleanly(t *testing.T) {
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- run(ctx, nil, func(k string) string {
			return map[string]string{"AGENT_PERSONA": "ada", "LISTEN_ADDR": "127.0.0.1:0", "AUTH_DISABLED": "true"}[k]
		}, []string{"AGENT_PERSONA=ada", "AGENT_MODLE=qwen"}, &stderr, &stderr)
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop")
	}
	if !strings.Contains(stderr.String(), `"msg":"agent listening"`) {
		t.Errorf("log lacks the listening line: %s", stderr.String())
	}
	// A misspelt setting is warned about at start, with the right name.
	if !strings.Contains(stderr.String(), "AGENT_MODLE is not a setting (did you mean AGENT_MODEL?)") {
		t.Errorf("log lacks the typo warning: %s", stderr.String())
	}
	// AUTH_DISABLED=true is warned about, whole: the log redactor mangled
	// the AUTH_READ_TOKEN warning into [REDACTED:secret-pair] (issue 31,
	// case 2).
	if !strings.Contains(stderr.String(), config.AuthDisabledWarning) {
		t.Errorf("log lacks the AUTH_DISABLED warning, whole: %s", stderr.String())
	}
}

// --help lists every setting with its default (from the same table Load
// reads); --version names the build; anything else is refused.
func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, nil, nil, &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, s := range config.Specs() {
		if !strings.Contains(out.String(), s.Name) {
			t.Errorf("--help lacks %s", s.Name)
		}
	}
	if !strings.Contains(out.String(), "45m") || !strings.Contains(out.String(), "AGENT_PERSONA") {
		t.Errorf("--help:\n%s", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"--version"}, nil, nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "agent ") {
		t.Errorf("--version = %d %q", code, out.String())
	}
	if code := run(context.Background(), []string{"--listen=:1"}, nil, nil, &out, &errOut); code != 2 {
		t.Errorf("an unknown flag exits %d, want 2", code)
	}
}

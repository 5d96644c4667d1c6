package settings

import (
	"bytes"
	"strings"
	"testing"
)

var table = []Spec{
	{Name: "AGENT_TOOLS", Help: "tools"}, {Name: "AGENT_MODEL", Help: "model"}, {Name: "LLM_BASE_URL", Help: "endpoint"},
	{Name: "PULSE_ENABLED", Default: "false", Help: "timer"}, {Name: "ALERT_COOLDOWN", Default: "30m", Help: "cooldown"},
}

func TestUnknownsWithDidYouMean(t *testing.T) {
	environ := []string{
		"AGENT_TOOL=a", "LLM_BASEURL=http://x", "AGENT_MODLE=q", "ALERT_COOLDOWNS=1h", "PULSE_ENABLE=false",
		"AGENT_MODEL=ok", "PATH=/bin", "HOME=/root", "AGENT_WHATEVER_ELSE_ENTIRELY=1",
		"AGENT_CALL_TIMEOUT=10m", // the other binary's
		"AGENT_PLATFORM_SRE_SERVICE_HOST=10.0.0.1", "AGENT_PLATFORM_SRE_PORT=tcp://10.0.0.1:8000",
		"AGENT_PLATFORM_SRE_PORT_8000_TCP_ADDR=10.0.0.1", "AGENT_PLATFORM_SRE_SERVICE_PORT_HTTP=8000",
	}
	got := Unknowns(environ, []string{"AGENT_", "LLM_", "PULSE_", "ALERT_"}, table, "AGENT_CALL_TIMEOUT")
	want := map[string]string{"AGENT_TOOL": "AGENT_TOOLS", "LLM_BASEURL": "LLM_BASE_URL", "AGENT_MODLE": "AGENT_MODEL",
		"ALERT_COOLDOWNS": "ALERT_COOLDOWN", "PULSE_ENABLE": "PULSE_ENABLED", "AGENT_WHATEVER_ELSE_ENTIRELY": ""}
	if len(got) != len(want) {
		t.Fatalf("unknowns = %+v, want %v", got, want)
	}
	for _, u := range got {
		if m, ok := want[u.Name]; !ok || m != u.DidYouMean {
			t.Errorf("%s: did you mean %q, want %q", u.Name, u.DidYouMean, m)
		}
	}
	if s := got[0].String(); !strings.Contains(s, "did you mean") {
		t.Errorf("%q", s)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"MODLE", "MODEL", 1}, {"kitten", "sitting", 3}, {"AGENT_TOOL", "AGENT_TOOLS", 1}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var b bytes.Buffer
	Help(&b, "usage: agent", table)
	for _, s := range table {
		if !strings.Contains(b.String(), s.Name) || !strings.Contains(b.String(), s.Help) {
			t.Errorf("help lacks %s", s.Name)
		}
	}
	if !strings.Contains(b.String(), "30m") {
		t.Error("help lacks a default")
	}
}

func TestFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code, done := Flags(nil, &out, &errOut, "agent", "usage", "v1", table); done || code != 0 {
		t.Errorf("no args: %d %v", code, done)
	}
	if code, done := Flags([]string{"--help"}, &out, &errOut, "agent", "usage", "v1", table); !done || code != 0 || !strings.Contains(out.String(), "PULSE_ENABLED") {
		t.Errorf("--help: %d %v %q", code, done, out.String())
	}
	out.Reset()
	if code, done := Flags([]string{"--version"}, &out, &errOut, "agent", "usage", "v1 (abc)", table); !done || code != 0 || out.String() != "agent v1 (abc)\n" {
		t.Errorf("--version: %d %v %q", code, done, out.String())
	}
	if code, done := Flags([]string{"--port=1"}, &out, &errOut, "agent", "usage", "v1", table); !done || code != 2 || !strings.Contains(errOut.String(), "--help") {
		t.Errorf("unknown flag: %d %v %q", code, done, errOut.String())
	}
}

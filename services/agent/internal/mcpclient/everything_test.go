package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpclient/mcptest"
)

// The protocol's reference server, on stdio: what is read-only, what is
// mutating, and every kind of content, through the gated call path.
func TestEverythingServer(t *testing.T) {
	cmd := mcptest.Everything(t)
	// The child gets Env, nothing else (the agent passes its own without its secrets).
	environ := []string{"KUBECREW_PLANTED_DB_PASSWORD=Pl4ntedEnvSecret", "PATH=/usr/bin:/bin"}
	c := mcpclient.Connect(context.Background(), mcpclient.Options{
		Servers:   []mcpclient.Spec{{Name: "ev", Command: cmd}},
		ReadTools: []string{"ev_echo", "ev_get-env", "ev_get-tiny-image", "ev_get-resource-*", "ev_get-sum", "ev_trigger-long-running-operation", "ev_toggle-simulated-logging"},
		Env:       environ, CallTimeout: 2 * time.Second,
	})
	t.Cleanup(c.Close)
	st := c.Status()
	if len(st) != 1 || st[0].State != "connected" {
		t.Fatalf("status %+v", st)
	}
	set := tools.Set(c.Tools())
	byName := map[string]tools.Tool{}
	for _, tl := range set {
		byName[tl.Name()] = tl
	}
	// read-only: annotated AND allowed; toggle-simulated-logging is allowed but not annotated,
	// get-annotated-message annotated but not allowed.
	for name, readOnly := range map[string]bool{"ev_echo": true, "ev_get-env": true, "ev_get-sum": true,
		"ev_toggle-simulated-logging": false, "ev_get-annotated-message": false, "ev_gzip-file-as-resource": false} {
		tl, ok := byName[name]
		if !ok {
			t.Fatalf("%s missing: %v", name, set.Names())
		}
		if tl.Mutating() == readOnly {
			t.Errorf("%s mutating = %v", name, tl.Mutating())
		}
	}
	kept, removed := set.ForMode(tools.ModeAutonomous)
	if _, ok := kept.Get("ev_toggle-simulated-logging"); ok || len(removed) == 0 {
		t.Errorf("the name gate kept a mutating tool: kept %v", kept.Names())
	}
	if _, ok := kept.Get("ev_echo"); !ok {
		t.Errorf("the name gate removed a read-only tool: kept %v", kept.Names())
	}

	auto := tools.WithMode(context.Background(), tools.ModeAutonomous)
	human := tools.WithMode(context.Background(), tools.ModeInteractive)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		tool     string
		args     string
		outcome  string
		want     []string
		not      []string
		maxChars int
	}{
		{"echo", auto, "ev_echo", `{"message":"hello kubecrew"}`, tools.OutcomeOK, []string{"hello kubecrew"}, nil, 0},
		{"long output is cut", auto, "ev_echo", `{"message":"` + strings.Repeat("y", 20000) + `"}`, tools.OutcomeOK, []string{"characters truncated"}, nil, 2000},
		{"secrets redacted", auto, "ev_get-env", `{}`, tools.OutcomeOK,
			[]string{"KUBECREW_PLANTED_DB_PASSWORD", "[REDACTED"}, []string{"Pl4ntedEnvSecret"}, 0},
		{"image named, not inlined", auto, "ev_get-tiny-image", `{}`, tools.OutcomeOK, []string{"[image image/png,", "bytes, not shown]"}, nil, 0},
		{"resource links", auto, "ev_get-resource-links", `{"count":2}`, tools.OutcomeOK, []string{"[resource "}, nil, 0},
		{"embedded resource", auto, "ev_get-resource-reference", `{"resourceType":"Text","resourceId":1}`, tools.OutcomeOK, []string{"[resource "}, nil, 0},
		{"schema validation before the call", auto, "ev_get-sum", `{"a":"one","b":2}`, tools.OutcomeError, []string{"ERROR: invalid arguments"}, nil, 0},
		{"unknown field", auto, "ev_get-sum", `{"a":1,"b":2}x`, tools.OutcomeError, []string{"ERROR: invalid arguments"}, nil, 0},
		{"sum", auto, "ev_get-sum", `{"a":1,"b":2}`, tools.OutcomeOK, []string{"3"}, nil, 0},
		{"slow tool times out", auto, "ev_trigger-long-running-operation", `{"duration":30,"steps":3}`, tools.OutcomeError,
			[]string{"did not answer trigger-long-running-operation within 2s"}, nil, 0},
		{"mutating refused when autonomous", auto, "ev_toggle-simulated-logging", `{}`, tools.OutcomeDenied,
			[]string{"denied by safety gate: mcp.ev_toggle-simulated-logging is not allowed in an autonomous run"}, nil, 0},
		{"mutating allowed when a person asked", human, "ev_toggle-simulated-logging", `{}`, tools.OutcomeOK, []string{"logging"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := set.Call(tc.ctx, tc.tool, json.RawMessage(tc.args), tc.maxChars)
			if res.Outcome != tc.outcome {
				t.Errorf("outcome %s, want %s: %s", res.Outcome, tc.outcome, clip(res.Output))
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q: %s", w, clip(res.Output))
				}
			}
			for _, w := range tc.not {
				if strings.Contains(res.Output, w) {
					t.Errorf("output has %q: %s", w, clip(res.Output))
				}
			}
		})
	}
}

// A server that cannot start is reported, not fatal; its tools are absent.
func TestServerDownAtStart(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	c := mcpclient.Connect(context.Background(), mcpclient.Options{
		Servers:        []mcpclient.Spec{{Name: "gone", Command: []string{"/nonexistent/mcp-server"}}, {Name: "web", URL: closed.URL + "/mcp"}},
		ConnectTimeout: 5 * time.Second,
	})
	t.Cleanup(c.Close)
	if len(c.Tools()) != 0 {
		t.Errorf("tools of a down server: %v", tools.Set(c.Tools()).Names())
	}
	down := c.Down()
	if len(down) != 2 || !strings.Contains(down[0], "gone: connecting to command /nonexistent/mcp-server") || !strings.HasPrefix(down[1], "web: ") {
		t.Errorf("down = %q", down)
	}
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

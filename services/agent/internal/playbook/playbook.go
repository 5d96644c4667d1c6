// Package playbook is what every persona's deterministic playbook uses
// (each persona's own code lives in internal/personas/<name>): calling a
// registry tool through the run's gated, traced path, recording a typed
// call the playbook makes directly, and reading the delegated finding.
package playbook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Call runs a tool of the run through the gated, traced path and decodes
// nothing: the text is what a model would have seen. n numbers the call
// within the playbook (its trace id is playbook-n).
func Call(ctx context.Context, r *engine.Run, n int, name string, args any) (string, bool) {
	out, outcome := r.CallTool(ctx, fmt.Sprintf("playbook-%d", n), name, args)
	return out, outcome == "ok"
}

// Traced runs fn, a typed call to the mechanism behind tool name, through
// the run's gated, counted path (engine.Run.CallTyped): the agent must have
// the tool, and the trace shows what the playbook read.
func Traced(ctx context.Context, r *engine.Run, id, name string, args any, fn func() (string, error)) (string, error) {
	return r.CallTyped(ctx, id, name, args, func(context.Context) (string, error) { return fn() })
}

// FindingFromContext reads the delegated finding (context.finding).
func FindingFromContext(r *engine.Run) (api.Finding, bool, error) {
	raw := strings.TrimSpace(r.Req.Context[engine.ContextFinding])
	if raw == "" {
		return api.Finding{}, false, nil
	}
	var f api.Finding
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return api.Finding{}, false, fmt.Errorf("context.finding is not a Finding: %w", err)
	}
	if f.Key == "" {
		f.Key = f.DeriveKey()
	}
	return f, true, nil
}

// FirstLine is s's first line, at most 300 bytes.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

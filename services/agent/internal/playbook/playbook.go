// Package playbook holds the personas' deterministic behaviour (ARCHITECTURE
// §2 step 9): what each agent does in code on real cluster and Git data when
// no model is configured, and the fallback when the model is down. The same
// code is Noor's backstop in model mode.
package playbook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// For returns the playbook of the persona with slug, or nil when it has none.
func For(slug string, d Deps) engine.Playbook {
	switch slug {
	case "platform-sre":
		if d.Cluster == nil {
			return nil
		}
		return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return noorSweep(ctx, r, d, true) })
	case "k8s-engineer":
		return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return solAct(ctx, r) })
	case "code-reviewer":
		if d.Reviewer == nil {
			return nil
		}
		return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return veraReview(ctx, r, d) })
	}
	return nil
}

// call runs a tool of the run through the gated, traced path and decodes
// nothing: the text is what a model would have seen.
func call(ctx context.Context, r *engine.Run, n int, name string, args any) (string, bool) {
	out, outcome := r.CallTool(ctx, fmt.Sprintf("playbook-%d", n), name, args)
	return out, outcome == "ok"
}

// traced records a typed call made by a playbook as tool_call/tool_result,
// so the trace shows what the playbook read.
func traced(ctx context.Context, r *engine.Run, id, name string, args any, fn func() (string, error)) (string, error) {
	raw, _ := json.Marshal(args)
	r.Event(ctx, "tool_call", map[string]any{"id": id, "name": name, "args": json.RawMessage(raw), "by": "playbook"})
	out, err := fn()
	outcome := "ok"
	if err != nil {
		outcome, out = "error", "ERROR: "+err.Error()
	}
	// The same redaction as every tool output (pkg/tools, README.md "Redaction").
	out, n := redact.String(out)
	ev := map[string]any{"id": id, "name": name, "outcome": outcome, "output": out, "by": "playbook"}
	if n.Total() > 0 {
		ev["redacted"] = n
	}
	r.Event(ctx, "tool_result", ev)
	return out, err
}

// findingFromContext reads the delegated finding (context.finding).
func findingFromContext(r *engine.Run) (api.Finding, bool, error) {
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

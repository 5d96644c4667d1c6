package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// A playbook's typed call takes the model's path: the agent must have the
// tool, the mechanism's execution gate applies, and the call is counted,
// traced and redacted like any other.
func TestPlaybookTypedCallsTakeTheGatedCountedPath(t *testing.T) {
	var calls []string
	var counted int
	pb := engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
		out, err := r.CallTyped(ctx, "playbook-1", "memory_read", map[string]string{"text": "x"}, func(context.Context) (string, error) {
			calls = append(calls, "memory_read")
			return "read with Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789", nil
		})
		if err != nil || strings.Contains(out, "abcdefghijklmnop") {
			t.Errorf("memory_read: %q %v (the text must come back redacted)", out, err)
		}
		// A tool this agent was never given is refused, its mechanism untouched.
		if _, err := r.CallTyped(ctx, "playbook-2", "kubectl_delete", nil, func(context.Context) (string, error) {
			calls = append(calls, "kubectl_delete")
			return "", nil
		}); err == nil || !strings.Contains(err.Error(), "not among this agent's tools") {
			t.Errorf("kubectl_delete: %v", err)
		}
		// The mechanism's own execution gate: an autonomous run may not scale.
		if _, err := r.CallTyped(ctx, "playbook-3", "memory_read", nil, func(ctx context.Context) (string, error) {
			return scalePrimitive(ctx, scaleArgs{Name: "db"})
		}); !errors.Is(err, tools.ErrDenied) {
			t.Errorf("scale: %v, want denied", err)
		}
		counted = r.Calls("memory_read")
		r.SetVerdict("done")
		return nil
	})
	rg := newRig(t, rigOpts{noModel: true, playbook: pb})
	res := rg.run(t, api.RunRequest{Task: "sweep", WorkflowType: api.WorkflowPulseTask})
	if res.Status != api.StatusCompleted || strings.Join(calls, ",") != "memory_read" || counted != 2 {
		t.Fatalf("run %s, mechanisms reached %v, memory_read counted %d (want 2)", res.Status, calls, counted)
	}
	var results, denied int
	for _, ev := range rg.events(t, res.RunID) {
		switch ev.Type {
		case "tool_result":
			results++
			if !strings.Contains(string(ev.Data), `"by":"playbook"`) {
				t.Errorf("tool_result not marked as the playbook's: %s", ev.Data)
			}
		case "guard_denied":
			if strings.Contains(string(ev.Data), `"gate":"execution"`) {
				denied++
			}
		}
	}
	if results != 3 || denied != 1 {
		t.Errorf("%d tool_result and %d execution-gate guard_denied events, want 3 and 1", results, denied)
	}
}

package sol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Backstop keeps Sol's duty to the reviewer in model mode: after a run in
// which bump_workload_memory opened a PR (or found its PR open), Vera is
// told in code when the model did not tell her itself — she would
// otherwise find the PR only at her next pulse.
func (*Sol) Backstop() engine.Backstop { return notifyReviewer }

func notifyReviewer(ctx context.Context, r *engine.Run) error {
	var opened string
	for _, c := range r.Results(ToolBumpMemory) {
		if c.Outcome == tools.OutcomeOK && strings.Contains(c.Output, "PR #") &&
			!strings.HasPrefix(c.Output, envelope.ProposedPrefix) && !strings.HasPrefix(c.Output, envelope.RecommendedPrefix) {
			opened = c.Output
		}
	}
	if opened == "" {
		return nil
	}
	for _, c := range r.Results(ToolNotify) {
		var a struct {
			AgentSlug string `json:"agent_slug"`
		}
		if c.Outcome != tools.OutcomeOK || json.Unmarshal(c.Args, &a) != nil {
			continue
		}
		if p, ok := persona.Lookup(strings.TrimSpace(a.AgentSlug)); ok && p.Slug == ReviewerSlug {
			return nil // the model told her
		}
	}
	f, _, _ := playbook.FindingFromContext(r)
	out, outcome := r.CallTool(ctx, "backstop-1", ToolNotify, map[string]string{"agent_slug": ReviewerSlug, "message": reviewMessage(f, opened)})
	r.Event(ctx, "backstop", map[string]any{"duty": "notify the reviewer of the PR", "to": ReviewerSlug, "outcome": outcome})
	if outcome != tools.OutcomeOK {
		return errors.New("reviewer not notified: " + out)
	}
	return nil
}

// reviewMessage is what Sol tells Vera about the PR for f.
func reviewMessage(f api.Finding, out string) string {
	return fmt.Sprintf("I opened a memory-limit PR for %s (finding %s). Please review it.\n%s", target(f), f.Key, prLine(out))
}

// prLine is the line of a bump_workload_memory answer that names the PR.
func prLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "PR #") {
			return strings.TrimSpace(l)
		}
	}
	return playbook.FirstLine(out)
}

package vera

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Prepare makes her model path review what her playbook would: when no PR
// is named, the pick is made in code (NextPR) and added to the task; with
// nothing to review the run is answered without a model call. nil without
// a GitOps repository.
func (v *Vera) Prepare() engine.Prepare {
	if v.rv == nil {
		return nil
	}
	return func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
		if _, named := prNumber(r); named {
			return engine.Prep{}, nil
		}
		next, found, err := pick(ctx, r, v.rv, "prepare-1")
		if err != nil {
			return engine.Prep{}, err
		}
		if !found {
			nothingToReview(r)
			return engine.Prep{Done: true}, nil
		}
		return engine.Prep{Note: fmt.Sprintf("Review PR #%d (%q by %s): it was picked in code as the oldest open agent PR you have not reviewed on its current head. "+
			"get_pr, then review_pr with one verdict; merge_if_trivial only after an approval.", next.Number, next.Title, next.Author)}, nil
	}
}

// Backstop keeps her duty in an autonomous run: the PR the run is about
// (named, or picked by Prepare) gets a review; when the model submitted
// none, the checks' verdict is submitted in code (and merge_if_trivial
// after an approval), as her playbook does. nil without a GitOps
// repository.
func (v *Vera) Backstop() engine.Backstop {
	if v.rv == nil {
		return nil
	}
	return func(ctx context.Context, r *engine.Run) error {
		n, ok := prNumber(r)
		if !api.Autonomous(r.Req.WorkflowType) || !ok || reviewed(r, n) {
			return nil
		}
		r.Event(ctx, "backstop", map[string]any{"duty": "review the PR", "pr": n})
		out, err := reviewOne(ctx, r, v.rv, n, 1)
		if err != nil {
			return fmt.Errorf("reviewing #%d: %w", n, err)
		}
		r.SetAnswer(describeReview(out))
		r.SetVerdict(out.Verdict)
		return nil
	}
}

// reviewed reports whether the run submitted a review of PR n.
func reviewed(r *engine.Run, n int) bool {
	for _, c := range r.Results("review_pr") {
		var a struct {
			Number int `json:"number"`
		}
		if c.Outcome == tools.OutcomeOK && json.Unmarshal(c.Args, &a) == nil && a.Number == n {
			return true
		}
	}
	return false
}

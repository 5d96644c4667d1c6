package deployreview

import (
	"context"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ToolName is the review's tool: Dax's model calls it first; his playbook
// runs the same review without a model.
const ToolName = "review_deploy_path"

type toolArgs struct {
	Path string `json:"path,omitempty" description:"Directory of the GitOps repository to review (e.g. apps/shop); empty for the whole repository."`
}

// Tool is review_deploy_path over repo: read-only, one line per finding
// (severity, rule id, file:line, what is wrong, the fix).
func Tool(repo Repo) tools.Tool {
	return tools.New(ToolName,
		"Review the GitOps repository's deploy path with the deterministic rules (Dockerfiles DF001-DF006, workload manifests KM001-KM009, "+
			"CI workflows CI001-CI002): one line per finding with severity, rule id, file:line, the problem and a one-line fix. "+
			"Rules switched off in "+ConfigPath+" are not reported. Call it first, then read files for context.",
		false, func(ctx context.Context, a toolArgs) (string, error) {
			rep, err := Review(ctx, repo, a.Path)
			if err != nil {
				return "", err
			}
			return rep.Render(), nil
		})
}

package deployreview

import (
	"context"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ToolName is the deploy-path review's tool: Dax's model calls it first;
// his playbook runs the same review without a model.
const ToolName = "review_deploy_path"

// APIToolName is the API design review's tool, Ada's first.
const APIToolName = "review_api_design"

type toolArgs struct {
	Path string `json:"path,omitempty" description:"Repository directory to review (e.g. apps/shop); empty = all of it."`
}

// Tool is review_deploy_path over repo: read-only, one line per finding
// (severity, rule id, file:line, what is wrong, the fix).
func Tool(repo Repo) tools.Tool {
	return reviewTool(ToolName, "Review the GitOps repository's deploy path (Dockerfiles DF001-DF006, manifests KM001-KM009, "+
		"CI workflows CI001-CI002)", repo, Review)
}

// APITool is review_api_design over repo: OpenAPI documents (OA001-OA005)
// and Services with the workloads behind them (SV001-SV003).
func APITool(repo Repo) tools.Tool {
	return reviewTool(APIToolName, "Review API design in the GitOps repository (OpenAPI documents OA001-OA005, "+
		"Services and their workloads SV001-SV003)", repo, ReviewAPI)
}

func reviewTool(name, what string, repo Repo, review func(context.Context, Repo, string) (*Report, error)) tools.Tool {
	return tools.New(name, what+": one line per finding with severity, rule id, file:line, the problem and the fix. "+
		"Rules off in "+ConfigPath+" are not reported. Call it first, then read files for context.",
		false, func(ctx context.Context, a toolArgs) (string, error) {
			rep, err := review(ctx, repo, a.Path)
			if err != nil {
				return "", err
			}
			return rep.Render(), nil
		})
}

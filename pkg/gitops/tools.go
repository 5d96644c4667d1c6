package gitops

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Tool names (the canonical names of the brief; manuals use exactly these).
const (
	ToolBumpWorkloadMemory = "bump_workload_memory"
	ToolListAgentPRs       = "list_agent_prs"
	ToolGetPR              = "get_pr"
	ToolReviewPR           = "review_pr"
	ToolMergeIfTrivial     = "merge_if_trivial"
	ToolReadRepoFile       = "read_repo_file"
	ToolListRepoFiles      = "list_repo_files"
)

// TruncatedBanner heads and ends a get_pr answer whose diff was cut.
const TruncatedBanner = "TRUNCATED — approval is forbidden"

// Tools returns every GitOps tool for agent me over forge f; the registry
// resolves which ones a persona gets (AGENT_TOOLS). me is the agent's slug:
// an empty identity makes every PR-changing tool refuse.
func Tools(f Forge, me string, opts Options) []tools.Tool {
	return NewService(f, me, opts).Tools()
}

// Tools returns the service's tools.
func (s *Service) Tools() []tools.Tool {
	return []tools.Tool{
		s.bumpTool(), s.listTool(), s.getTool(), s.reviewTool(), s.mergeTool(), s.readTool(), s.listFilesTool(), s.searchTool(),
	}
}

type bumpArgs struct {
	Namespace  string  `json:"namespace"`
	Kind       string  `json:"kind" enum:"Deployment,StatefulSet,DaemonSet,ReplicaSet,Job,CronJob" description:"owner of the pod template"`
	Name       string  `json:"name" description:"the workload, not a pod"`
	Container  string  `json:"container" description:"the OOMKilled container"`
	Factor     float64 `json:"factor,omitempty" description:"more than 1, at most 2 (default 1.5)"`
	FindingKey string  `json:"finding_key,omitempty" description:"names the branch; one PR per key (default: derived from the workload and container)"`
	Reason     string  `json:"reason,omitempty" description:"evidence for the PR body, e.g. 'OOMKilled 293 times in 26h, exit 137'"`
}

func (s *Service) bumpTool() tools.Tool {
	return tools.New(ToolBumpWorkloadMemory,
		"Open a PR raising one container's memory limit in the GitOps repository (+1/−1 diff on branch agent/fix/<finding_key>). "+
			"Never touches the cluster; for the same finding it returns the open PR.",
		true, func(ctx context.Context, a bumpArgs) (string, error) {
			r, err := s.ProposeMemoryBump(ctx, BumpRequest(a))
			if err != nil {
				return "", err
			}
			if r.NotMade != "" {
				return r.NotMade, nil
			}
			var b strings.Builder
			if r.Existing {
				fmt.Fprintf(&b, "A PR for this finding is already open; no new PR was opened.\nPR #%d: %s\n", r.PR.Number, r.PR.URL)
			} else {
				fmt.Fprintf(&b, "Opened PR #%d: %s\n", r.PR.Number, r.PR.URL)
			}
			fmt.Fprintf(&b, "branch: %s\n", r.PR.Branch)
			if r.Path != "" {
				fmt.Fprintf(&b, "file: %s", r.Path)
				if r.How != "" {
					fmt.Fprintf(&b, " (found by %s)", r.How)
				}
				fmt.Fprintf(&b, "\nchange: resources.limits.memory of container %s: %s -> %s\n", a.Container, r.Old, r.New)
			}
			fmt.Fprintf(&b, "diff:\n%s", r.Diff)
			if len(r.Stale) > 0 {
				fmt.Fprintf(&b, "\nNote: %d agent PR(s) are stale and need a person: %s\n", len(r.Stale), prList(r.Stale))
			}
			return b.String(), nil
		})
}

type listArgs struct {
	State string `json:"state,omitempty" enum:"open,merged,closed,all" description:"Which PRs. Default open."`
}

func (s *Service) listTool() tools.Tool {
	return tools.New(ToolListAgentPRs,
		"List pull requests proposed by agents (branches agent/fix/…), oldest first, with author, age and whether they are stale.",
		false, func(ctx context.Context, a listArgs) (string, error) {
			state := a.State
			if state == "all" {
				state = ""
			} else if state == "" {
				state = StateOpen
			}
			if _, err := validState(state); err != nil {
				return "", err
			}
			var prs []PR
			var err error
			if state == "" {
				prs, err = s.ListAgentPRs(ctx, "all")
			} else {
				prs, err = s.ListAgentPRs(ctx, state)
			}
			if err != nil {
				return "", err
			}
			if len(prs) == 0 {
				return "No agent PRs in that state.", nil
			}
			now := s.opts.Now()
			var b strings.Builder
			for _, p := range prs {
				fmt.Fprintf(&b, "#%d [%s] %s — by %s, %s old, branch %s", p.Number, p.State, p.Title, p.Author, age(now.Sub(p.CreatedAt)), p.Branch)
				if p.State == StateOpen && now.Sub(p.CreatedAt) > s.opts.StaleAfter {
					b.WriteString(" — STALE: needs a person")
				}
				b.WriteString("\n")
			}
			return b.String(), nil
		})
}

type numberArgs struct {
	Number int `json:"number" description:"The pull request number."`
}

func (s *Service) getTool() tools.Tool {
	return tools.New(ToolGetPR,
		"Read one agent pull request: title, author, body, reviews, the whole diff (or a loud TRUNCATED marker when it is too long to show — then approval is forbidden), "+
			"and the result of the five automated review checks.",
		false, func(ctx context.Context, a numberArgs) (string, error) {
			v, err := s.GetPR(ctx, a.Number)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			if v.Truncated {
				fmt.Fprintf(&b, "%s: the diff is %d characters; only the first %d are shown. Do not approve this PR.\n\n", TruncatedBanner, v.FullChars, len(v.Diff))
			}
			p := v.PR
			fmt.Fprintf(&b, "PR #%d [%s] %s\nauthor: %s\nbranch: %s → %s\nopened: %s\nurl: %s\n", p.Number, p.State, p.Title, p.Author, p.Branch, p.Base, p.CreatedAt.Format("2006-01-02 15:04 MST"), p.URL)
			fmt.Fprintf(&b, "\nbody:\n%s\n", p.Body)
			if len(v.Reviews) == 0 {
				b.WriteString("\nreviews: none\n")
			} else {
				b.WriteString("\nreviews:\n")
				for _, r := range v.Reviews {
					fmt.Fprintf(&b, "- %s %s at %s: %s\n", r.Reviewer, r.Verdict, r.At.Format("2006-01-02 15:04"), oneLine(r.Body, 300))
				}
			}
			fmt.Fprintf(&b, "\ndiff (%d characters):\n%s", v.FullChars, v.Diff)
			if v.Truncated {
				fmt.Fprintf(&b, "\n[%s: %d more characters not shown]\n", TruncatedBanner, v.FullChars-len(v.Diff))
			}
			fmt.Fprintf(&b, "\nautomated checks (suggested verdict: %s):\n%s\n", v.SuggestedVerdict, v.SuggestedBody)
			return b.String(), nil
		})
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

type reviewArgs struct {
	Number  int    `json:"number" description:"The pull request number."`
	Verdict string `json:"verdict" enum:"approve,request_changes,comment" description:"Your verdict."`
	Body    string `json:"body,omitempty" description:"Your reasoning. Required (real sentences) for request_changes and comment."`
}

func (s *Service) reviewTool() tools.Tool {
	return tools.New(ToolReviewPR,
		"Submit a review of an agent pull request: approve, request_changes or comment. You cannot review your own PR; "+
			"request_changes and comment need a real explanation; a diff too long to have been seen whole cannot be approved.",
		true, func(ctx context.Context, a reviewArgs) (string, error) {
			r, err := s.Review(ctx, a.Number, a.Verdict, a.Body)
			if err != nil {
				return "", err
			}
			if r.Note != "" {
				return fmt.Sprintf("Review submitted on PR #%d (%s) as a %s, NOT as %s: %s", r.PR.Number, r.PR.Title, r.Verdict, a.Verdict, r.Note), nil
			}
			return fmt.Sprintf("Review submitted on PR #%d (%s): %s.", r.PR.Number, r.PR.Title, r.Verdict), nil
		})
}

func (s *Service) mergeTool() tools.Tool {
	return tools.New(ToolMergeIfTrivial,
		"Merge an agent pull request only if it is the one trivial shape: one line of one manifest, a memory limit raised more than 1× and at most 2×, "+
			"approved by an agent other than its author. Everything is re-checked from the diff; anything else stays open for a human, with the reason.",
		true, func(ctx context.Context, a numberArgs) (string, error) {
			r, err := s.MergeIfTrivial(ctx, a.Number)
			if err != nil {
				return "", err
			}
			if r.Merged {
				return fmt.Sprintf("MERGED PR #%d: memory limit %s -> %s is now on %s.", r.PR.Number, r.Old, r.New, r.PR.Base), nil
			}
			return fmt.Sprintf("NOT MERGED — PR #%d stays open for a human: %s", r.PR.Number, r.Reason), nil
		})
}

type pathArgs struct {
	Path string `json:"path" description:"Repository-relative file path, e.g. apps/base/api/deployment.yaml."`
}

func (s *Service) readTool() tools.Tool {
	return tools.New(ToolReadRepoFile,
		"Read one file of the GitOps repository as it is on the base branch.",
		false, func(ctx context.Context, a pathArgs) (string, error) {
			b, err := s.f.ReadFile(ctx, a.Path)
			if err != nil {
				return "", err
			}
			return string(b), nil
		})
}

type dirArgs struct {
	Dir string `json:"dir,omitempty" description:"Directory to list recursively; empty for the whole repository."`
}

func (s *Service) listFilesTool() tools.Tool {
	return tools.New(ToolListRepoFiles,
		"List the files of the GitOps repository on the base branch, recursively under a directory.",
		false, func(ctx context.Context, a dirArgs) (string, error) {
			files, err := s.f.ListFiles(ctx, a.Dir)
			if err != nil {
				return "", err
			}
			if len(files) == 0 {
				return "No files there.", nil
			}
			return strings.Join(files, "\n"), nil
		})
}

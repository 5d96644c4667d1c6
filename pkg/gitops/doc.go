// Package gitops is how kubecrew changes what runs: never the cluster, always
// a pull request against the GitOps repository (docs/ARCHITECTURE.md).
//
// The edit. BumpMemory raises one container's resources.limits.memory by
// splicing the new value over exactly the bytes of the old scalar, located by
// yaml.v3 node positions. Nothing is re-serialised, so the diff is +1/−1 and
// comments, quoting, flow mappings, block scalars, anchors and "---"
// separators survive. Containers and initContainers are both
// searched. Default 1.5×, never above 2×, rounded up to a whole Mi ("NGi"
// when whole, else "NMi"). The result is re-parsed and must equal the input
// in every document but that one value, or the edit is refused.
//
// The forges. Forge is implemented by Local (a git repository driven by the
// git CLI with plumbing only — a private index, commit-tree, update-ref — so
// no working tree is touched; PRs and reviews are records under
// <git-dir>/kubecrew/) and GitHub (go-github; the agent identity travels as
// "proposed-by:" and "reviewed-by:" trailers because agents may share a
// token; the account the credentials act as is AccountForge: one account for
// the PR's opener and its reviewer is a self-approval GitHub refuses, so the
// review becomes a comment saying so and merge_if_trivial leaves the PR for
// a person; branch protection is read and never bypassed). ForgeFromEnv reads GITOPS_FORGE, GITOPS_REPO, GITOPS_BRANCH,
// GITHUB_TOKEN and GITHUB_API_URL.
//
// The checks. TrivialMergeCheck is the one diff shape that may merge without
// a person, re-derived from the diff alone; VerifyDiffOnManifest
// applies the diff to the base file and checks the parsed YAML;
// ReviewPR is Vera's five checks. Which PR to review and what
// to do about a finding are the personas' policy and live with them in
// services/agent/internal/personas.
//
// The tools. Tools (or NewService(...).Tools()) gives bump_workload_memory,
// list_agent_prs, get_pr, review_pr, merge_if_trivial, read_repo_file and
// list_repo_files for one agent identity; Service exposes the same
// operations to deterministic playbooks (ProposeMemoryBump, GetPR, Review,
// MergeIfTrivial, ListAgentPRs, Reviews, StalePRs). Each mutating operation calls the
// execution gate (tools.Check) itself.
//
// Every guard fails closed: an unknown identity, a branch outside
// agent/fix/, a diff that could not be seen whole, a value that cannot be
// parsed — each is a refusal with a reason, never a best guess.
package gitops

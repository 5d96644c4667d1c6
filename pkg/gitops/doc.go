// Package gitops is how kubecrew changes what runs: never the cluster, always
// a pull request against the GitOps repository (ARCHITECTURE §5).
//
// It holds four things:
//
//   - the edit: BumpMemory raises one container's resources.limits.memory by
//     splicing the new value over exactly the bytes of the old scalar, located
//     by yaml.v3 node positions. Nothing is re-serialised, so the diff is +1/−1
//     and comments, quoting, flow mappings, block scalars, anchors and "---"
//     separators survive (seed §13, §19).
//   - the forges behind one interface: a local git repository driven by the
//     git CLI (plumbing only, never a working tree) and GitHub via go-github.
//   - the deterministic reviews: TrivialMergeCheck, the one diff shape that
//     may merge itself (seed §21), and ReviewPR, Vera's five checks (seed §14).
//   - the tools: bump_workload_memory (Sol), list_agent_prs, get_pr,
//     review_pr, merge_if_trivial (Vera), read_repo_file, list_repo_files.
//
// Every guard here fails closed: an unknown identity, a branch outside
// agent/fix/, a diff that could not be seen whole, a value that cannot be
// parsed — each is a refusal with a reason, never a best guess.
package gitops

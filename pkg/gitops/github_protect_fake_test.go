package gitops

import (
	"fmt"
	"net/http"
	"strings"
)

// fakeProtection is a classic branch protection of the base branch: the
// required status check contexts and approving reviews.
type fakeProtection struct {
	Checks    []string
	Approvals int
	Strict    bool
}

// serveUser is GET /user: the account behind the token (documented shape,
// trimmed), or the 403 an App installation token gets.
func (f *fakeGitHub) serveUser(w http.ResponseWriter, user string) {
	if f.userForbidden {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Resource not accessible by integration", "status": "403",
			"documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"login": user, "id": len(user), "node_id": "U_" + user, "type": "User", "site_admin": false,
		"html_url": "https://github.example/" + user})
}

// serveProtection is GET /repos/{o}/{r}/branches/main/protection: 404
// "Branch not protected", 404 "Not Found" for a caller without admin
// rights, or the protection's documented shape.
func (f *fakeGitHub) serveProtection(w http.ResponseWriter, user string) {
	const doc = "https://docs.github.com/rest/branches/branch-protection#get-branch-protection"
	if !f.admins[user] {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": doc, "status": "404"})
		return
	}
	p := f.protection
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Branch not protected", "documentation_url": doc, "status": "404"})
		return
	}
	base := fmt.Sprintf("https://api.github.example/repos/%s/%s/branches/main/protection", f.owner, f.repo)
	body := map[string]any{
		"url":                              base,
		"enforce_admins":                   map[string]any{"url": base + "/enforce_admins", "enabled": true},
		"required_linear_history":          map[string]any{"enabled": false},
		"allow_force_pushes":               map[string]any{"enabled": false},
		"allow_deletions":                  map[string]any{"enabled": false},
		"required_conversation_resolution": map[string]any{"enabled": false},
	}
	if len(p.Checks) > 0 {
		var checks []map[string]any
		for _, c := range p.Checks {
			checks = append(checks, map[string]any{"context": c, "app_id": nil})
		}
		body["required_status_checks"] = map[string]any{"url": base + "/required_status_checks", "strict": p.Strict,
			"contexts": p.Checks, "checks": checks, "contexts_url": base + "/required_status_checks/contexts"}
	}
	if p.Approvals > 0 {
		body["required_pull_request_reviews"] = map[string]any{"url": base + "/required_pull_request_reviews",
			"dismiss_stale_reviews": true, "require_code_owner_reviews": false,
			"required_approving_review_count": p.Approvals, "require_last_push_approval": false}
	}
	writeJSON(w, http.StatusOK, body)
}

// protectionUnmet is the 405 message GitHub gives when p may not merge
// yet, or "": required checks first, then approving reviews (stale ones,
// on an older head, are dismissed).
func (f *fakeGitHub) protectionUnmet(p *fakePR) string {
	pr := f.protection
	if pr == nil {
		return ""
	}
	head := f.branches[p.Head]
	for _, c := range pr.Checks {
		if f.statuses[head][c] != "success" {
			return fmt.Sprintf("Required status check %q is expected.", c)
		}
	}
	approvers := map[string]bool{}
	for _, rv := range p.Reviews {
		if rv.State == "APPROVED" && rv.Commit == head && rv.User != p.User {
			approvers[rv.User] = true
		}
	}
	if len(approvers) < pr.Approvals {
		if pr.Approvals == 1 {
			return "At least 1 approving review is required by reviewers with write access."
		}
		return fmt.Sprintf("At least %d approving reviews are required by reviewers with write access.", pr.Approvals)
	}
	return ""
}

// mergeableState is the PR's mergeable_state as GitHub reports it.
func (f *fakeGitHub) mergeableState(p *fakePR) string {
	switch {
	case p.State != "open":
		return "unknown"
	case f.stateUnknown:
		return "unknown"
	case f.protectionUnmet(p) != "":
		return "blocked"
	}
	return "clean"
}

// setStatus records a commit status on the head of branch.
func (f *fakeGitHub) setStatus(branch, context, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sha := f.branches[branch]
	if f.statuses[sha] == nil {
		f.statuses[sha] = map[string]string{}
	}
	f.statuses[sha][strings.TrimSpace(context)] = state
}

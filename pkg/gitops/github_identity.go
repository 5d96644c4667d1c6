package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v93/github"
)

// ErrNotMergeable is wrapped when GitHub will not merge a PR for a reason
// other than branch protection (a conflict with the base, a draft).
var ErrNotMergeable = errors.New("the forge will not merge the pull request")

// MergeBlockedError says why GitHub will not merge a PR: its answer (the
// 405's message, or the PR's mergeable_state) and, when the credentials may
// read them, the base branch's protection rules. It wraps ErrProtected when
// protection is the reason, ErrNotMergeable otherwise.
type MergeBlockedError struct {
	Number    int
	Base      string
	Message   string   // GitHub's words
	Rules     []string // what the base branch requires; nil when unknown
	RulesNote string   // why the rules are unknown, when they are
	Protected bool
}

func (e *MergeBlockedError) Error() string {
	var b strings.Builder
	if e.Protected {
		fmt.Fprintf(&b, "branch protection on %s blocks merging #%d: GitHub says %q", e.Base, e.Number, e.Message)
	} else {
		fmt.Fprintf(&b, "GitHub will not merge #%d into %s: %q", e.Number, e.Base, e.Message)
	}
	switch {
	case len(e.Rules) > 0:
		fmt.Fprintf(&b, "; %s requires %s", e.Base, strings.Join(e.Rules, "; "))
	case e.RulesNote != "":
		fmt.Fprintf(&b, " (%s)", e.RulesNote)
	}
	if e.Protected {
		b.WriteString(". Nothing was bypassed: it merges once those rules are met")
	}
	return b.String()
}

func (e *MergeBlockedError) Unwrap() error {
	if e.Protected {
		return ErrProtected
	}
	return ErrNotMergeable
}

// Account implements AccountForge: the login the credentials act as (GET
// /user for a token, the App's bot for an installation), asked once. An
// error is not remembered, so the next call asks again.
func (g *GitHub) Account(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.account != "" {
		return g.account, nil
	}
	login, err := g.whoami(ctx)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(login) == "" {
		return "", errors.New("github: the forge named no account for these credentials")
	}
	g.account = login
	return login, nil
}

// userLogin is GET /user: the account a token belongs to.
func (g *GitHub) userLogin(ctx context.Context) (string, error) {
	u, resp, err := g.c.Users.Get(ctx, "")
	if err != nil {
		return "", ghErr("asking which account the token acts as (GET /user)", resp, err)
	}
	return u.GetLogin(), nil
}

// apiMessage is GitHub's message and its errors[] in one line.
func apiMessage(err error) string {
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		return err.Error()
	}
	parts := []string{strings.TrimSpace(er.Message)}
	for _, e := range er.Errors {
		if m := strings.TrimSpace(e.Message); m != "" {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ": ")
}

// selfApproval recognises GitHub's 422 to an approval by the PR's opener:
// {"message":"Unprocessable Entity","errors":["Can not approve your own pull request"]}.
func selfApproval(err error) bool {
	return strings.Contains(strings.ToLower(apiMessage(err)), "approve your own pull request")
}

// mergeable reads the PR's mergeable_state before a merge: "blocked"
// (protection unmet), "dirty" (conflicts) and "draft" are refused here, so
// credentials that could bypass protection (an admin's) never do.
// "unknown" (GitHub still computing) and the rest go on to the merge, which
// GitHub itself refuses with a 405 when protection is unmet.
func (g *GitHub) mergeable(ctx context.Context, number int) error {
	pr, resp, err := g.c.PullRequests.Get(ctx, g.owner, g.repo, number)
	if err != nil {
		return ghErr(fmt.Sprintf("pull request #%d", number), resp, err)
	}
	switch pr.GetMergeableState() {
	case "blocked":
		return g.protectionError(ctx, number, "the pull request is blocked (mergeable_state: blocked)")
	case "dirty":
		return &MergeBlockedError{Number: number, Base: g.base, Message: "the pull request conflicts with its base (mergeable_state: dirty)"}
	case "draft":
		return &MergeBlockedError{Number: number, Base: g.base, Message: "the pull request is a draft (mergeable_state: draft)"}
	}
	return nil
}

// protectionPhrases are the parts of GitHub's 405 messages that name a
// protection rule ("Required status check \"ci/test\" is expected.", "At
// least 1 approving review is required by reviewers with write access.",
// "Changes must be made through a pull request.", …).
var protectionPhrases = []string{"status check", "approving review", "review is required", "protected branch",
	"branch protection", "code owner", "signed", "linear history", "conversation", "blocked"}

// protectionError builds the MergeBlockedError for GitHub's message,
// reading the base branch's protection to name what it requires.
func (g *GitHub) protectionError(ctx context.Context, number int, msg string) error {
	e := &MergeBlockedError{Number: number, Base: g.base, Message: msg}
	low := strings.ToLower(msg)
	for _, p := range protectionPhrases {
		if strings.Contains(low, p) {
			e.Protected = true
		}
	}
	p, resp, err := g.c.Repositories.GetBranchProtection(ctx, g.owner, g.repo, g.base)
	switch {
	case errors.Is(err, github.ErrBranchNotProtected):
		e.RulesNote = g.base + " has no branch protection"
	case err != nil && (status(resp) == http.StatusForbidden || status(resp) == http.StatusNotFound):
		e.RulesNote = "the protection rules of " + g.base + " are not readable with these credentials (that needs admin access)"
	case err != nil:
		e.RulesNote = "reading the protection rules failed: " + apiMessage(err)
	default:
		e.Rules = protectionRules(p)
		if len(e.Rules) > 0 && !strings.Contains(low, "not mergeable") {
			e.Protected = true
		}
	}
	return e
}

// protectionRules says what a branch protection requires, one rule a line.
func protectionRules(p *github.Protection) []string {
	var out []string
	if c := p.RequiredStatusChecks; c != nil {
		var names []string
		if c.Checks != nil {
			for _, ck := range *c.Checks {
				names = append(names, ck.Context)
			}
		}
		if len(names) == 0 && c.Contexts != nil {
			names = *c.Contexts
		}
		r := "status checks " + strings.Join(names, ", ") + " to pass"
		if len(names) == 0 {
			r = "status checks to pass"
		}
		if c.Strict {
			r += " on a branch up to date with the base"
		}
		out = append(out, r)
	}
	if rv := p.RequiredPullRequestReviews; rv != nil {
		r := fmt.Sprintf("%d approving review(s)", max(rv.RequiredApprovingReviewCount, 1))
		if rv.RequireCodeOwnerReviews {
			r += " including a code owner's"
		}
		if rv.RequireLastPushApproval {
			r += ", not from the last pusher"
		}
		out = append(out, r)
	}
	if c := p.RequiredConversationResolution; c != nil && c.Enabled {
		out = append(out, "every conversation resolved")
	}
	if s := p.RequiredSignatures; s != nil && s.GetEnabled() {
		out = append(out, "signed commits")
	}
	if l := p.RequireLinearHistory; l != nil && l.Enabled {
		out = append(out, "a linear history")
	}
	if a := p.EnforceAdmins; a != nil && a.Enabled {
		out = append(out, "all of it for admins too")
	}
	return out
}

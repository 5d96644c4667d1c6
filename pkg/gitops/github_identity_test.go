package gitops

import (
	"strings"
	"testing"
)

// identityLoop sets up the GitHub loop up to an open memory-bump PR #1
// opened by Sol with solToken; Vera's agent uses veraToken.
func identityLoop(t *testing.T, solToken, veraToken string, setup func(*fakeGitHub)) (*fakeGitHub, agentTools) {
	t.Helper()
	files := map[string]string{}
	for k, v := range e2eRepo(t) {
		files[k] = string(v)
	}
	clk := &fakeClock{t: t0}
	fake := newFakeGitHub(t, files, clk.Now)
	if setup != nil {
		setup(fake)
	}
	solF, err := NewGitHub("acme", "gitops", "main", solToken, fake.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	veraF, err := NewGitHub("acme", "gitops", "main", veraToken, fake.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: clk.Now}
	sol := newAgent(t, solF, "k8s-engineer", opts)
	mustContain(t, sol.call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding)), "Opened PR #1")
	fake.ResetCalls()
	return fake, newAgent(t, veraF, "code-reviewer", opts)
}

func countCalls(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// One GitHub account for Sol and Vera: GitHub would refuse her approval
// (422), so it goes in as a comment saying a person must approve and
// merge, and merge_if_trivial refuses without calling the merge API.
func TestGitHubSharedIdentityWaitsForAHuman(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		userForbidden bool   // GET /user refused: the 422 is how she learns it
		wantMerge     string // merge_if_trivial's reason
	}{
		{"GET /user names the opener", false, "one shared identity: this agent (code-reviewer) acts as the forge account kubecrew-sol, which also opened the PR"},
		{"GET /user refused, GitHub answers 422", true, "it cannot be shown that this agent's forge account did not open the PR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, vera := identityLoop(t, "sol-token", "sol-token", func(f *fakeGitHub) { f.userForbidden = tc.userForbidden })
			out := vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve", "body": "All five checks pass."})
			mustContain(t, out, "as a comment, NOT as approve", "waits for a person to approve and merge it", SharedIdentityDoc)
			fake.mu.Lock()
			reviews := append([]fakeReview(nil), fake.prs[0].Reviews...)
			fake.mu.Unlock()
			if len(reviews) != 1 || reviews[0].State != "COMMENTED" || !strings.Contains(reviews[0].Body, "the same account that opened this pull request") ||
				!strings.Contains(reviews[0].Body, "All five checks pass.") {
				t.Fatalf("reviews on GitHub: %+v", reviews)
			}
			posts := countCalls(fake.Calls(), "POST /repos/acme/gitops/pulls/1/reviews")
			if want := map[bool]int{false: 1, true: 2}[tc.userForbidden]; posts != want {
				t.Errorf("%d review POSTs, want %d (%q)", posts, want, fake.Calls())
			}
			fake.ResetCalls()
			out = vera.call(ToolMergeIfTrivial, map[string]any{"number": 1})
			mustContain(t, out, "NOT MERGED — PR #1 stays open for a human: "+tc.wantMerge)
			calls := fake.Calls()
			if countCalls(calls, "PUT /repos/acme/gitops/pulls/1/merge") != 0 {
				t.Errorf("the merge API was called: %q", calls)
			}
			if n := countCalls(calls, "GET /user"); tc.userForbidden != (n == 1) {
				t.Errorf("GET /user %d times in the merge (an answer is asked once and kept): %q", n, calls)
			}
			if main, _ := fake.file("main", "fixtures/kubecrew/oomkill.yaml"); !strings.Contains(main, "memory: 32Mi") {
				t.Error("main changed")
			}
		})
	}
}

// Distinct accounts: Vera approves as herself and merge_if_trivial merges,
// unless the base branch's protection is unmet; then it says which rule
// blocks and merges nothing (an admin's token never bypasses it).
func TestGitHubDistinctIdentityHonoursProtection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		protection *fakeProtection
		ciPassed   bool
		admin      bool // Vera may read the protection rules
		unknown    bool // mergeable_state not computed yet: the merge API answers
		want       []string
		merged     bool
	}{
		{name: "no protection", merged: true, want: []string{"MERGED PR #1"}},
		{name: "checks and review met", protection: &fakeProtection{Checks: []string{"ci/test"}, Approvals: 1}, ciPassed: true, merged: true, want: []string{"MERGED PR #1"}},
		{name: "blocked by a missing check, rules readable", protection: &fakeProtection{Checks: []string{"ci/test"}, Approvals: 1, Strict: true}, admin: true,
			want: []string{"branch protection on main blocks merging #1", "mergeable_state: blocked",
				"main requires status checks ci/test to pass on a branch up to date with the base; 1 approving review(s); all of it for admins too", "Nothing was bypassed"}},
		{name: "405 required status check", protection: &fakeProtection{Checks: []string{"ci/test"}, Approvals: 1}, admin: true, unknown: true,
			want: []string{`GitHub says "Required status check \"ci/test\" is expected."`, "main requires status checks ci/test to pass"}},
		{name: "405 two approvals, rules unreadable", protection: &fakeProtection{Approvals: 2}, unknown: true,
			want: []string{`"At least 2 approving reviews are required by reviewers with write access."`, "not readable with these credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, vera := identityLoop(t, "sol-token", "vera-token", func(f *fakeGitHub) {
				f.protection, f.stateUnknown = tc.protection, tc.unknown
				if tc.admin {
					f.admins["kubecrew-vera"] = true
				}
			})
			if tc.ciPassed {
				fake.setStatus("agent/fix/"+oomFinding.DeriveKey(), "ci/test", "success")
			}
			mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve", "body": "All five checks pass."}), "Review submitted on PR #1", ": approve.")
			fake.mu.Lock()
			rv := fake.prs[0].Reviews
			fake.mu.Unlock()
			if len(rv) != 1 || rv[0].State != "APPROVED" || rv[0].User != "kubecrew-vera" {
				t.Fatalf("reviews: %+v", rv)
			}
			out := vera.call(ToolMergeIfTrivial, map[string]any{"number": 1})
			mustContain(t, out, tc.want...)
			main, _ := fake.file("main", "fixtures/kubecrew/oomkill.yaml")
			if tc.merged != strings.Contains(main, "memory: 48Mi") {
				t.Errorf("merged=%v but main holds:\n%s", tc.merged, main)
			}
			calls := fake.Calls()
			if got := countCalls(calls, "GET /user"); got != 1 {
				t.Errorf("GET /user asked %d times, want once: %q", got, calls)
			}
			puts := countCalls(calls, "PUT /repos/acme/gitops/pulls/1/merge")
			if want := tc.merged || tc.unknown; want != (puts == 1) {
				t.Errorf("%d merge PUTs: %q", puts, calls)
			}
		})
	}
}

package gitops

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const blockDiff = `diff --git a/apps/base/api/deployment.yaml b/apps/base/api/deployment.yaml
index 3b18e51..a9c2f4d 100644
--- a/apps/base/api/deployment.yaml
+++ b/apps/base/api/deployment.yaml
@@ -28,7 +28,7 @@ spec:
               memory: 256Mi
             limits:
               cpu: "1"
-              memory: 256Mi   # keep in step with GOMEMLIMIT below
+              memory: 384Mi   # keep in step with GOMEMLIMIT below
           env:
             - name: GOMEMLIMIT
               value: "230MiB"
`

const flowDiff = `diff --git a/apps/oomkill/deployment.yaml b/apps/oomkill/deployment.yaml
index 1111111..2222222 100644
--- a/apps/oomkill/deployment.yaml
+++ b/apps/oomkill/deployment.yaml
@@ -11,4 +11,4 @@ spec:
       - name: app
         image: busybox:1.36
         command: ["sh", "-c", "sleep 20; head -c 48m /dev/zero | tail > /dev/null; sleep 3600"]
-        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 32Mi}}
+        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 48Mi}}
`

func agentPR() PR {
	return PR{Number: 7, Branch: "agent/fix/web-deployment-api-api-oomkilled", Base: "main", Author: "k8s-engineer", State: StateOpen, CreatedAt: t0}
}

func approved() []Review {
	return []Review{{Reviewer: "code-reviewer", Verdict: VerdictApprove, Body: "ok", At: t0.Add(time.Hour)}}
}

// edit returns blockDiff with old replaced by new, once.
func edit(d, old, new string) string { return strings.Replace(d, old, new, 1) }

func TestTrivialMergeCheck(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		pr      func(*PR)
		diff    string
		reviews []Review
		reason  string // "" = accepted
	}
	tests := []tc{
		{name: "block style accepted", diff: blockDiff},
		{name: "flow style accepted", diff: flowDiff},
		{name: "quoted value accepted", diff: edit(edit(blockDiff, "-              memory: 256Mi ", `-              memory: "256Mi"`), "+              memory: 384Mi ", `+              memory: "384Mi"`)},
		{name: "exactly 2x accepted", diff: edit(blockDiff, "+              memory: 384Mi", "+              memory: 512Mi")},
		{name: "request then approval by the same reviewer", diff: blockDiff, reviews: []Review{
			{Reviewer: "code-reviewer", Verdict: VerdictRequestChanges, Body: "x", At: t0.Add(time.Minute)},
			{Reviewer: "code-reviewer", Verdict: VerdictApprove, At: t0.Add(time.Hour)},
			{Reviewer: "platform-sre", Verdict: VerdictComment, Body: "fine by me", At: t0.Add(2 * time.Hour)},
		}},

		{name: "human branch", pr: func(p *PR) { p.Branch = "renovate/busybox-1.37" }, diff: blockDiff, reason: "not an agent/fix/ branch"},
		{name: "bare prefix", pr: func(p *PR) { p.Branch = "agent/fix/" }, diff: blockDiff, reason: "not an agent/fix/ branch"},
		{name: "already merged", pr: func(p *PR) { p.State = StateMerged }, diff: blockDiff, reason: "not open"},
		{name: "no author", pr: func(p *PR) { p.Author = "" }, diff: blockDiff, reason: "no author"},
		{name: "empty diff", diff: "", reason: "empty"},
		{name: "garbage diff", diff: "hello\n", reason: "does not parse"},
		{name: "two files", diff: blockDiff + strings.ReplaceAll(blockDiff, "apps/base/api/", "apps/base/web/"), reason: "touches 2 files"},
		{name: "mode change", diff: edit(blockDiff, "index 3b18e51..a9c2f4d 100644\n", "old mode 100644\nnew mode 100755\nindex 3b18e51..a9c2f4d\n"), reason: "more than content"},
		{name: "new file", diff: edit(blockDiff, "--- a/apps/base/api/deployment.yaml", "--- /dev/null"), reason: "creates, deletes or renames"},
		{name: "rename", diff: edit(blockDiff, "+++ b/apps/base/api/deployment.yaml", "+++ b/apps/base/api/deploy.yaml"), reason: "creates, deletes or renames"},
		{name: "second changed line", diff: edit(edit(blockDiff, "@@ -28,7 +28,7 @@", "@@ -28,7 +28,7 @@"), "               cpu: \"1\"\n", "-              cpu: \"1\"\n+              cpu: \"2\"\n"), reason: "removes 2 and adds 2"},
		{name: "added line only", diff: edit(edit(blockDiff, "@@ -28,7 +28,7 @@", "@@ -28,7 +28,8 @@"), "           env:\n", "+          # bumped\n           env:\n"), reason: "removes 1 and adds 2"},
		{name: "hunk counts lie", diff: edit(blockDiff, "@@ -28,7 +28,7 @@", "@@ -28,6 +28,6 @@"), reason: "does not parse"},
		{name: "cpu smuggled into the same line", diff: edit(flowDiff, "+        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 48Mi}}", "+        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 4, memory: 48Mi}}"), reason: "differs in more than a memory value"},
		{name: "comment changed too", diff: edit(blockDiff, "+              memory: 384Mi   # keep", "+              memory: 384Mi   # raised; keep"), reason: "differs in more than a memory value"},
		{name: "quote style changed", diff: edit(blockDiff, "+              memory: 384Mi ", `+              memory: "384Mi"`), reason: "differs in more than a memory value"},
		{name: "request and limit both changed", diff: edit(flowDiff, "+        resources: {requests: {cpu: 10m, memory: 16Mi}", "+        resources: {requests: {cpu: 10m, memory: 24Mi}"), reason: "several"},
		{name: "request changed, not the limit", diff: edit(flowDiff, "+        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 48Mi}}", "+        resources: {requests: {cpu: 10m, memory: 24Mi}, limits: {cpu: 100m, memory: 32Mi}}"), reason: `under "requests"`},
		{name: "block request changed", diff: strings.NewReplacer("             requests:", "             requests:", "-              memory: 256Mi   # keep", "-              memory: 256Mi   # keep").Replace(
			"diff --git a/apps/x/d.yaml b/apps/x/d.yaml\n--- a/apps/x/d.yaml\n+++ b/apps/x/d.yaml\n@@ -26,3 +26,3 @@\n             requests:\n               cpu: 100m\n-              memory: 256Mi\n+              memory: 384Mi\n"), reason: `under "requests:"`},
		{name: "limits not visible in context", diff: "diff --git a/apps/x/d.yaml b/apps/x/d.yaml\n--- a/apps/x/d.yaml\n+++ b/apps/x/d.yaml\n@@ -31 +31 @@\n-              memory: 256Mi\n+              memory: 384Mi\n", reason: "does not show"},
		{name: "not a memory line", diff: edit(edit(blockDiff, "-              memory: 256Mi   # keep in step with GOMEMLIMIT below", "-              cpu: 256Mi"), "+              memory: 384Mi   # keep in step with GOMEMLIMIT below", "+              cpu: 384Mi"), reason: "not a memory value"},
		{name: "3x bump", diff: edit(blockDiff, "+              memory: 384Mi", "+              memory: 768Mi"), reason: "3.00×"},
		{name: "just over 2x", diff: edit(blockDiff, "+              memory: 384Mi", "+              memory: 513Mi"), reason: "2.00×"},
		{name: "a decrease", diff: edit(blockDiff, "+              memory: 384Mi", "+              memory: 128Mi"), reason: "0.50×"},
		{name: "unit typo", diff: edit(blockDiff, "+              memory: 384Mi", "+              memory: 384MB"), reason: "unparseable"},
		{name: "newline at end changed", diff: edit(flowDiff, "limits: {cpu: 100m, memory: 32Mi}}\n", "limits: {cpu: 100m, memory: 32Mi}}\n\\ No newline at end of file\n"), reason: "newline"},
		{name: "not adjacent", diff: "diff --git a/apps/x/d.yaml b/apps/x/d.yaml\n--- a/apps/x/d.yaml\n+++ b/apps/x/d.yaml\n@@ -1,3 +1,3 @@\n             limits:\n-              memory: 256Mi\n               cpu: 1\n+              memory: 384Mi\n", reason: "not the same line"},
		{name: "secrets path", diff: strings.ReplaceAll(blockDiff, "apps/base/api/deployment.yaml", "apps/base/api/secrets/deployment.yaml"), reason: `"secrets" path`},
		{name: "flux-system path", diff: strings.ReplaceAll(blockDiff, "apps/base/api/deployment.yaml", "clusters/home/flux-system/gotk-sync.yaml"), reason: `"flux-system" path`},
		{name: "CI path", diff: strings.ReplaceAll(blockDiff, "apps/base/api/deployment.yaml", ".github/workflows/build.yaml"), reason: `".github" path`},
		{name: "not yaml", diff: strings.ReplaceAll(blockDiff, "apps/base/api/deployment.yaml", "apps/base/api/values.json"), reason: "only YAML"},

		{name: "no review", diff: blockDiff, reviews: []Review{}, reason: "no approval"},
		{name: "self approval", diff: blockDiff, reviews: []Review{{Reviewer: "k8s-engineer", Verdict: VerdictApprove, At: t0}}, reason: "no approval by an agent other than the author"},
		{name: "self approval under the persona name", diff: blockDiff, reviews: []Review{{Reviewer: "Sol", Verdict: VerdictApprove, At: t0}}, reason: "no approval by an agent other than the author"},
		{name: "approval without a name", diff: blockDiff, reviews: []Review{{Reviewer: " ", Verdict: VerdictApprove, At: t0}}, reason: "no approval"},
		{name: "only a comment", diff: blockDiff, reviews: []Review{{Reviewer: "code-reviewer", Verdict: VerdictComment, Body: "looks fine", At: t0}}, reason: "no approval"},
		{name: "approval of an older commit", pr: func(p *PR) { p.HeadSHA = "bbbb" }, diff: blockDiff, reviews: []Review{{Reviewer: "code-reviewer", Verdict: VerdictApprove, Commit: "aaaa", At: t0}}, reason: "no approval"},
		{name: "approval of the head commit", pr: func(p *PR) { p.HeadSHA = "bbbb" }, diff: blockDiff, reviews: []Review{{Reviewer: "code-reviewer", Verdict: VerdictApprove, Commit: "bbbb", At: t0}}},
		{name: "request changes after approval", diff: blockDiff, reviews: []Review{
			{Reviewer: "code-reviewer", Verdict: VerdictApprove, At: t0.Add(time.Hour)},
			{Reviewer: "alice", Verdict: VerdictRequestChanges, Body: "wait for the load test", At: t0.Add(2 * time.Hour)},
		}, reason: "alice requested changes"},
		{name: "earlier request by another reviewer still stands", diff: blockDiff, reviews: []Review{
			{Reviewer: "code-reviewer", Verdict: VerdictApprove, At: t0.Add(3 * time.Hour)},
			{Reviewer: "alice", Verdict: VerdictRequestChanges, Body: "wait for the load test", At: t0.Add(time.Hour)},
		}, reason: "alice requested changes"},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pr := agentPR()
			if c.pr != nil {
				c.pr(&pr)
			}
			rv := c.reviews
			if rv == nil {
				rv = approved()
			}
			err := TrivialMergeCheck(pr, c.diff, rv)
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want refusal %q", c.reason)
			}
			if !errors.Is(err, ErrNotTrivial) {
				t.Errorf("error does not wrap ErrNotTrivial: %v", err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("reason %q does not say %q", err, c.reason)
			}
		})
	}
}

func TestVerifyDiffOnManifest(t *testing.T) {
	t.Parallel()
	block := readTestdata(t, "bump/block.yaml")
	bs := readTestdata(t, "bump/blockscalar.yaml")
	anch := readTestdata(t, "bump/anchors.yaml")
	tests := []struct {
		name   string
		base   []byte
		diff   string
		reason string
	}{
		{"limit", block, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -31 +31 @@\n-              memory: 256Mi   # keep in step with GOMEMLIMIT below\n+              memory: 384Mi   # keep in step with GOMEMLIMIT below\n", ""},
		{"request", block, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -28 +28 @@\n-              memory: 256Mi\n+              memory: 384Mi\n", "not a container's resources.limits.memory"},
		{"inside a block scalar", bs, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -24 +24 @@\n-                  # memory: 256Mi is what we thought this needs\n+                  # memory: 384Mi is what we thought this needs\n", "command[2]"},
		{"anchored value shared", anch, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -15 +15 @@\n-              memory: &mem 128Mi\n+              memory: &mem 192Mi\n", "alters 2 values"},
		{"stale base", block, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -31 +31 @@\n-              memory: 512Mi   # keep in step with GOMEMLIMIT below\n+              memory: 768Mi   # keep in step with GOMEMLIMIT below\n", "does not apply"},
		{"breaks the yaml", block, "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -31 +31 @@\n-              memory: 256Mi   # keep in step with GOMEMLIMIT below\n+              memory: [384Mi   # keep in step with GOMEMLIMIT below\n", "does not parse"},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := VerifyDiffOnManifest(c.base, c.diff)
			if c.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("got %v; want a refusal saying %q", err, c.reason)
			}
		})
	}
}

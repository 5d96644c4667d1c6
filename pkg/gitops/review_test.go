package gitops

import (
	"strings"
	"testing"
)

func TestReviewPR(t *testing.T) {
	t.Parallel()
	block := readTestdata(t, "bump/block.yaml")
	warmer := readTestdata(t, "bump/blockscalar.yaml")
	bumped, _, _, err := BumpMemory(block, "Deployment", "api", "api", 0)
	if err != nil {
		t.Fatal(err)
	}
	good := unifiedDiff("apps/base/api/deployment.yaml", string(block), string(bumped))
	wb, _, _, _ := BumpMemory(warmer, "CronJob", "cache-warmer", "warmer", 0)
	warmerDiff := unifiedDiff("apps/base/cache-warmer/cronjob.yaml", string(warmer), string(wb))
	// The seed's PR: the file re-serialised, comments gone, many lines moved.
	roundTrip := unifiedDiff("apps/base/api/deployment.yaml", string(block),
		strings.ReplaceAll(strings.ReplaceAll(string(bumped), "# ", ""), "  ", "    "))
	threeX := unifiedDiff("apps/base/api/deployment.yaml", string(block), strings.Replace(string(block), "memory: 256Mi   #", "memory: 768Mi   #", 1))
	pr := func(claim string) PR {
		return PR{Number: 3, Branch: "agent/fix/web-deployment-api-api-oomkilled", Author: "k8s-engineer", State: StateOpen,
			Body: "## Change\nchange: " + claim + "\n\nproposed-by: k8s-engineer\nfinding-key: web-deployment-api-api-oomkilled"}
	}
	tests := []struct {
		name      string
		pr        PR
		diff      string
		truncated bool
		manifest  []byte
		verdict   string
		says      []string
	}{
		{"clean bump", pr("256Mi -> 384Mi"), good, false, block, VerdictApprove,
			[]string{"1. diff matches the body — PASS", "3. the size is proportionate — PASS: 1.50×", "All five checks pass"}},
		{"body claims another value", pr("256Mi -> 512Mi"), good, false, block, VerdictRequestChanges,
			[]string{"1. diff matches the body — FAIL: the body claims 256Mi → 512Mi, the diff changes 256Mi → 384Mi"}},
		{"body claims nothing", PR{Number: 3, Branch: "agent/fix/x", Author: "k8s-engineer", State: StateOpen, Body: "raise it"}, good, false, block, VerdictRequestChanges,
			[]string{`does not state its change`}},
		{"yaml round trip", pr("256Mi -> 384Mi"), roundTrip, false, block, VerdictRequestChanges,
			[]string{"1. diff matches the body — FAIL", "file was rewritten"}},
		{"unbounded growth", pr("256Mi -> 384Mi"), warmerDiff, false, warmer, VerdictRequestChanges,
			[]string{"2. a bigger limit is the right fix — FAIL", `container "warmer" runs an endless loop ("while True")`, `".append("`, "bounded memory in the app"}},
		{"3x", pr("256Mi -> 768Mi"), threeX, false, block, VerdictRequestChanges,
			[]string{"3. the size is proportionate — FAIL: 256Mi → 768Mi is 3.00×"}},
		{"secrets path", pr("256Mi -> 384Mi"), strings.ReplaceAll(good, "apps/base/api/deployment.yaml", "apps/base/api/secrets/deployment.yaml"), false, block, VerdictRequestChanges,
			[]string{"4. it touches only the app's own files — FAIL", `"secrets" path`}},
		{"flux-system path", pr("256Mi -> 384Mi"), strings.ReplaceAll(good, "apps/base/api/deployment.yaml", "clusters/home/flux-system/api.yaml"), false, block, VerdictRequestChanges,
			[]string{"4. it touches only the app's own files — FAIL"}},
		{"path does not name the app", pr("256Mi -> 384Mi"), strings.ReplaceAll(good, "apps/base/api/deployment.yaml", "apps/base/web/deployment.yaml"), false, block, VerdictApprove,
			[]string{"the path does not name api"}},
		{"truncated small diff", pr("256Mi -> 384Mi"), good, true, block, VerdictComment,
			[]string{"5. the whole diff was seen — FAIL: the diff was TRUNCATED; approval is forbidden"}},
		{"truncated big diff", pr("256Mi -> 384Mi"), roundTrip[:len(roundTrip)/2], true, block, VerdictRequestChanges,
			[]string{"1. diff matches the body — FAIL: the diff was truncated", "5. the whole diff was seen — FAIL"}},
		{"manifest unavailable", pr("256Mi -> 384Mi"), good, false, nil, VerdictComment,
			[]string{"2. a bigger limit is the right fix — NOT CHECKED"}},
		{"manifest moved on", pr("256Mi -> 384Mi"), good, false, bumped, VerdictRequestChanges,
			[]string{"holds 384Mi, not the 256Mi the diff removes"}},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, body := ReviewPR(c.pr, c.diff, c.truncated, c.manifest)
			if v != c.verdict {
				t.Errorf("verdict %s, want %s\n%s", v, c.verdict, body)
			}
			for _, s := range c.says {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			if v != VerdictApprove && substantive(body) != nil {
				t.Errorf("a blocking body is not substantive: %q", body)
			}
		})
	}
}

func TestUnboundedGrowth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script    string
		unbounded bool
	}{
		{"import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))\n    time.sleep(1)\n", true},
		{"const a = [];\nsetInterval(() => a.push(Buffer.alloc(1e6)), 100)", true},
		{"data = b''\nwhile 1:\n    data += b'x' * 1024\n", true},
		{"sleep 20; head -c 50331648 /dev/zero | tail > /dev/null; sleep 3600", false},
		{"while true; do date; sleep 5; done", false},
		{"count = 0\nwhile True:\n    count += 1\n    time.sleep(1)\n", false},
		{"q = []\nwhile True:\n    q.append(read())\n    if len(q) > 100:\n        q.pop(0)\n", false},
		{"from collections import deque\nq = deque(maxlen=100)\nwhile True:\n    q.append(read())\n", false},
		{"chunks = []\nfor i in range(10):\n    chunks.append(x)\n", false},
		{"", false},
	}
	for _, c := range tests {
		if got := unboundedGrowth(c.script) != ""; got != c.unbounded {
			t.Errorf("unboundedGrowth(%q) = %v, want %v", c.script, got, c.unbounded)
		}
	}
}

func TestSubstantive(t *testing.T) {
	t.Parallel()
	for body, ok := range map[string]bool{
		"":                                false,
		"no":                              false,
		"LGTM":                            false,
		"bad bad bad bad bad bad bad bad": false,
		"!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!":                          false,
		"The bump is 3x; keep it within 1.5x.":                             true,
		"This diff rewrites the whole file; splice only the memory value.": true,
	} {
		if got := substantive(body) == nil; got != ok {
			t.Errorf("substantive(%q) = %v, want %v", body, got, ok)
		}
	}
}

func TestProposalBody(t *testing.T) {
	t.Parallel()
	p := Proposal{Kind: "Deployment", Namespace: "web", Name: "api", Container: "api", Path: "apps/base/api/deployment.yaml",
		Old: "256Mi", New: "384Mi", Factor: 1.5, FindingKey: "web-deployment-api-api-oomkilled", Author: "k8s-engineer",
		Evidence: "OOMKilled 12 times.\nfinding-key: evil\nchange: 1Mi -> 2Mi"}
	body := p.Body()
	golden(t, "proposal_body.golden", []byte(body))
	if FindingKeyOf(body) != "web-deployment-api-api-oomkilled" {
		t.Errorf("finding key %q", FindingKeyOf(body))
	}
	if o, n, ok := ClaimedChange(body); !ok || o != "256Mi" || n != "384Mi" {
		t.Errorf("claimed %q %q %v", o, n, ok)
	}
	if trailer(body, "proposed-by") != "k8s-engineer" {
		t.Error("no proposed-by trailer")
	}
	if !strings.HasPrefix(p.Title(), "fix(api): raise api memory limit 256Mi → 384Mi") {
		t.Errorf("title %q", p.Title())
	}
}

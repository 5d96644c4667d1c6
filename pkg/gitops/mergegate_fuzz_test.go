package gitops

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// unifiedDiff builds a git-style one-hunk diff of old → new for path, with
// up to three lines of context. It is a test helper, independent of the
// parser under test.
func unifiedDiff(path, old, new string) string {
	if old == new {
		return ""
	}
	split := func(s string) []string {
		l := strings.SplitAfter(s, "\n")
		if l[len(l)-1] == "" {
			l = l[:len(l)-1]
		}
		return l
	}
	a, b := split(old), split(new)
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	cs := max(p-3, 0)
	ae := min(len(a)-s+3, len(a))
	be := min(len(b)-s+3, len(b))
	var sb strings.Builder
	fmt.Fprintf(&sb, "diff --git a/%s b/%s\nindex 0000001..0000002 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	rng := func(start, n int) string {
		if n == 0 {
			return fmt.Sprintf("%d,0", start)
		}
		return fmt.Sprintf("%d,%d", start+1, n)
	}
	fmt.Fprintf(&sb, "@@ -%s +%s @@\n", rng(cs, ae-cs), rng(cs, be-cs))
	emit := func(op byte, l string) {
		sb.WriteByte(op)
		if strings.HasSuffix(l, "\n") {
			sb.WriteString(l)
		} else {
			sb.WriteString(l + "\n\\ No newline at end of file\n")
		}
	}
	for _, l := range a[cs:p] {
		emit(' ', l)
	}
	for _, l := range a[p : len(a)-s] {
		emit('-', l)
	}
	for _, l := range b[p : len(b)-s] {
		emit('+', l)
	}
	for _, l := range a[len(a)-s : ae] {
		emit(' ', l)
	}
	return sb.String()
}

var tokenRE = regexp.MustCompile(`[0-9A-Za-z.+-]+|[^0-9A-Za-z.+-]`)

// FuzzTrivialMergeCheck: the gate never accepts a change of more than one
// memory value. Inputs are an old and a new file (diffed by the helper
// above) or a raw diff; whenever the gate accepts, an independent look at
// the diff text must find exactly one removed and one added line that
// differ in exactly one token, a quantity 1×–2× the old one, after a
// "memory" key.
func FuzzTrivialMergeCheck(f *testing.F) {
	block := string(readTestdata(f, "bump/block.yaml"))
	flow := string(readTestdata(f, "bump/flow.yaml"))
	f.Add(block, strings.Replace(block, "memory: 256Mi   #", "memory: 384Mi   #", 1), "", false)
	f.Add(flow, strings.Replace(flow, "memory: 32Mi}", "memory: 48Mi}", 1), "", false)
	f.Add(flow, strings.Replace(flow, "cpu: 100m, memory: 32Mi}", "cpu: 1, memory: 48Mi}", 1), "", false)
	f.Add(flow, strings.Replace(strings.Replace(flow, "memory: 32Mi}", "memory: 48Mi}", 1), "memory: 16Mi}", "memory: 24Mi}", 1), "", false)
	f.Add(block, strings.Replace(strings.Replace(block, "memory: 256Mi   #", "memory: 384Mi   #", 1), "cpu: \"1\"", "cpu: \"2\"", 1), "", false)
	f.Add("", "", blockDiff, true)
	f.Add("", "", flowDiff, true)
	f.Fuzz(func(t *testing.T, old, new, raw string, useRaw bool) {
		diff := raw
		if !useRaw {
			diff = unifiedDiff("apps/base/x/deployment.yaml", old, new)
		}
		if err := TrivialMergeCheck(agentPR(), diff, approved()); err != nil {
			return
		}
		var minus, plus []string
		inHunk := false
		for _, l := range strings.Split(diff, "\n") {
			switch {
			case strings.HasPrefix(l, "@@"):
				inHunk = true
			case strings.HasPrefix(l, "diff --git"):
				inHunk = false
			case inHunk && strings.HasPrefix(l, "-"):
				minus = append(minus, l[1:])
			case inHunk && strings.HasPrefix(l, "+"):
				plus = append(plus, l[1:])
			}
		}
		if len(minus) != 1 || len(plus) != 1 {
			t.Fatalf("accepted a diff with -%d/+%d lines:\n%s", len(minus), len(plus), diff)
		}
		a, b := tokenRE.FindAllString(minus[0], -1), tokenRE.FindAllString(plus[0], -1)
		if len(a) != len(b) {
			t.Fatalf("accepted lines of different shape:\n-%q\n+%q", minus[0], plus[0])
		}
		changed := -1
		for i := range a {
			if a[i] != b[i] {
				if changed >= 0 {
					t.Fatalf("accepted a line changing two tokens:\n-%q\n+%q", minus[0], plus[0])
				}
				changed = i
			}
		}
		if changed < 0 {
			t.Fatalf("accepted identical lines")
		}
		ob, err1 := parseMemory(a[changed])
		nb, err2 := parseMemory(b[changed])
		if err1 != nil || err2 != nil || !ratioWithin(ob, nb) {
			t.Fatalf("accepted %q → %q", a[changed], b[changed])
		}
		key := strings.TrimRight(strings.Join(a[:changed], ""), " \t\"'")
		key = strings.TrimRight(strings.TrimSuffix(key, ":"), " \t\"'")
		if !strings.HasSuffix(key, "memory") {
			t.Fatalf("accepted a quantity that is not a memory value: %q", minus[0])
		}
		if !useRaw {
			if strings.Count(old, "\n") != strings.Count(new, "\n") {
				t.Fatalf("accepted a change of line count")
			}
		}
	})
}

// The fuzz target's diff helper must produce diffs the gate accepts for a
// real bump, or the target proves nothing.
func TestUnifiedDiffHelperAccepted(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"block.yaml", "flow.yaml", "multidoc.yaml", "blockscalar.yaml", "oomkill.yaml"} {
		src := readTestdata(t, "bump/"+f)
		var out []byte
		var err error
		switch f {
		case "block.yaml":
			out, _, _, err = BumpMemory(src, "Deployment", "api", "api", 0)
		case "flow.yaml", "oomkill.yaml":
			out, _, _, err = BumpMemory(src, "Deployment", "oomkill", "app", 0)
		case "multidoc.yaml":
			out, _, _, err = BumpMemory(src, "Deployment", "worker", "worker", 0)
		case "blockscalar.yaml":
			out, _, _, err = BumpMemory(src, "CronJob", "cache-warmer", "warmer", 2)
		}
		if err != nil {
			t.Fatal(err)
		}
		d := unifiedDiff("apps/base/x/deployment.yaml", string(src), string(out))
		if err := TrivialMergeCheck(agentPR(), d, approved()); err != nil {
			t.Errorf("%s: the gate refused a real bump: %v\n%s", f, err, d)
		}
		if err := VerifyDiffOnManifest(src, d); err != nil {
			t.Errorf("%s: manifest check refused a real bump: %v", f, err)
		}
	}
}

package gitops

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkResult is one of the five checks.
type checkResult struct {
	name    string
	outcome string // pass | fail | unknown
	detail  string
}

const (
	checkPass    = "PASS"
	checkFail    = "FAIL"
	checkUnknown = "NOT CHECKED"
)

// ReviewPR is Vera's deterministic review of an agent memory-bump PR: the
// five checks of her pr-review-protocol skill, each derived from
// the diff, the body and the manifest as it is on the base branch.
//
//  1. the diff matches the body: one file, +1/−1, and the body's
//     "change: OLD -> NEW" is exactly the value that changes;
//  2. a bigger limit is the right fix: the container's command/args do not
//     show memory growing without bound (a loop that only ever appends);
//  3. the size is proportionate: more than 1×, at most 2× (~1.5× is the
//     convention);
//  4. it touches only the app's own file: no secrets, RBAC, flux-system or CI
//     paths, YAML only;
//  5. the whole diff was seen: truncated is never approved.
//
// Any failed check → request_changes. All checks pass but one could not be
// made (diff truncated, manifest missing) → comment. All pass → approve.
// The body lists every check with its evidence.
func ReviewPR(pr PR, diff string, truncated bool, manifest []byte) (verdict, body string) {
	mc, shapeErr := analyseMemoryDiff(diff)
	fix, workload := checkRightFix(mc, manifest)
	res := []checkResult{
		checkClaim(pr, mc, shapeErr, truncated),
		fix,
		checkProportion(mc),
		checkScope(diff, workload),
		checkWholeDiff(diff, truncated),
	}
	verdict = verdictOf(res, truncated)
	var b strings.Builder
	fmt.Fprintf(&b, "Automated review of #%d (five checks):\n", pr.Number)
	for i, r := range res {
		fmt.Fprintf(&b, "%d. %s — %s: %s\n", i+1, r.name, r.outcome, r.detail)
	}
	switch verdict {
	case VerdictApprove:
		b.WriteString("All five checks pass: approving.")
	case VerdictComment:
		b.WriteString("Not approving: a check could not be made; a person should look.")
	default:
		b.WriteString("Requesting changes for the failed checks above.")
	}
	return verdict, b.String()
}

// verdictOf is the one verdict of the five checks: approve only when all
// pass; a check that could not be made, or only the truncation failing,
// asks a person to look; any other failure requests changes.
func verdictOf(res []checkResult, truncated bool) string {
	failed, unknown, onlyTruncation := false, false, true
	for i, r := range res {
		switch r.outcome {
		case checkFail:
			failed = true
			if i != len(res)-1 { // the last check is the whole-diff one
				onlyTruncation = false
			}
		case checkUnknown:
			unknown = true
		}
	}
	switch {
	case failed && truncated && onlyTruncation:
		// Only the truncation failed: say so, but do not block what might
		// be fine — a person must look.
		return VerdictComment
	case failed:
		return VerdictRequestChanges
	case unknown:
		return VerdictComment
	}
	return VerdictApprove
}

// checkClaim, check 1: the diff matches the body — one memory value,
// changed as the body's "change: OLD -> NEW" line says, not under the
// request.
func checkClaim(pr PR, mc *memoryChange, shapeErr error, truncated bool) checkResult {
	c := checkResult{name: "diff matches the body"}
	claimOld, claimNew, claimed := ClaimedChange(pr.Body)
	switch {
	case truncated && shapeErr != nil:
		c.outcome, c.detail = checkFail, "the diff was truncated, so it is far larger than a one-value change"
	case shapeErr != nil && mc == nil:
		c.outcome, c.detail = checkFail, shapeErr.Error()+" — a one-value change that produced more than that means the file was rewritten"
	case !claimed:
		c.outcome, c.detail = checkFail, `the body does not state its change as one "change: OLD -> NEW" line`
	case claimOld != mc.Old || claimNew != mc.New:
		c.outcome, c.detail = checkFail, fmt.Sprintf("the body claims %s → %s, the diff changes %s → %s", claimOld, claimNew, mc.Old, mc.New)
	case mc.UnderLimit != nil:
		c.outcome, c.detail = checkFail, mc.UnderLimit.Error()
	default:
		c.outcome, c.detail = checkPass, fmt.Sprintf("+1/−1 in %s, line %d: %s → %s, as the body says", mc.Path, mc.LineNo, mc.Old, mc.New)
	}
	return c
}

// checkRightFix, check 2: a bigger limit is the right fix — nothing in the
// container's command shows memory growing without bound. It also returns
// the container's workload, for check 4.
func checkRightFix(mc *memoryChange, manifest []byte) (c checkResult, workload string) {
	c = checkResult{name: "a bigger limit is the right fix"}
	switch {
	case mc == nil:
		c.outcome, c.detail = checkUnknown, "no single memory value to relate to a container"
	case manifest == nil:
		c.outcome, c.detail = checkUnknown, "the manifest could not be read, so the container's command was not seen"
	default:
		wl, ctr, cmd, err := containerAtLine(manifest, mc.LineNo, mc.Old)
		workload = wl
		switch {
		case err != nil:
			c.outcome, c.detail = checkFail, err.Error()
		default:
			if why := unboundedGrowth(cmd); why != "" {
				c.outcome, c.detail = checkFail, fmt.Sprintf("container %q %s; a higher limit only delays the next OOM kill — the fix is bounded memory in the app", ctr, why)
			} else {
				c.outcome, c.detail = checkPass, fmt.Sprintf("container %q: nothing in its command or args shows memory growing without bound", ctr)
			}
		}
	}
	return c, workload
}

// checkProportion, check 3: the new size is proportionate (above 1×, at
// most MaxFactor×).
func checkProportion(mc *memoryChange) checkResult {
	c := checkResult{name: "the size is proportionate"}
	switch {
	case mc == nil:
		c.outcome, c.detail = checkUnknown, "no single memory value changes"
	case mc.Ratio > MaxFactor:
		c.outcome, c.detail = checkFail, fmt.Sprintf("%s → %s is %.2f×: above %d× a memory fix becomes a scheduling problem elsewhere; the convention is ~1.5×", mc.Old, mc.New, mc.Ratio, MaxFactor)
	case mc.Ratio <= 1:
		c.outcome, c.detail = checkFail, fmt.Sprintf("%s → %s is %.2f×: not a raise", mc.Old, mc.New, mc.Ratio)
	case mc.Ratio > 1.75:
		c.outcome, c.detail = checkPass, fmt.Sprintf("%.2f×: within 2×, though above the ~1.5× convention", mc.Ratio)
	default:
		c.outcome, c.detail = checkPass, fmt.Sprintf("%.2f×, near the ~1.5× convention", mc.Ratio)
	}
	return c
}

// checkScope, check 4: the diff touches one manifest, none of the
// sensitive paths.
func checkScope(diff, workload string) checkResult {
	c := checkResult{name: "it touches only the app's own files"}
	files, perr := parseUnifiedDiff(diff)
	switch {
	case perr != nil:
		c.outcome, c.detail = checkUnknown, "the diff does not parse: "+perr.Error()
	default:
		var bad []string
		for _, p := range diffFiles(files) {
			if s, why := SensitivePath(p); s {
				bad = append(bad, p+" ("+why+")")
			}
		}
		switch {
		case len(bad) > 0:
			c.outcome, c.detail = checkFail, "touches "+strings.Join(bad, "; ")
		case len(files) != 1:
			c.outcome, c.detail = checkFail, fmt.Sprintf("touches %d files: %s", len(files), strings.Join(diffFiles(files), ", "))
		default:
			c.outcome, c.detail = checkPass, "one manifest: "+diffFiles(files)[0]
			if workload != "" && !strings.Contains(diffFiles(files)[0], workload) {
				c.detail += fmt.Sprintf(" (the path does not name %s; check it is the app's own file)", workload)
			}
		}
	}
	return c
}

// checkWholeDiff, check 5: the whole diff was seen.
func checkWholeDiff(diff string, truncated bool) checkResult {
	c := checkResult{name: "the whole diff was seen"}
	if truncated {
		c.outcome, c.detail = checkFail, "the diff was TRUNCATED; approval is forbidden on a diff not seen whole"
	} else {
		c.outcome, c.detail = checkPass, fmt.Sprintf("%d characters, read whole", len(diff))
	}
	return c
}

// containerAtLine finds the container whose resources.limits.memory is the
// scalar at line (1-based) with value old, and returns its workload's name,
// its name and its command and args joined.
func containerAtLine(manifest []byte, line int, old string) (workload, name, cmd string, err error) {
	docs, err := decodeNodes(manifest)
	if err != nil {
		return "", "", "", fmt.Errorf("the manifest on the base branch does not parse: %w", err)
	}
	for _, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		root := d.Content[0]
		kind := scalarAt(root, "kind")
		specPath, ok := podSpecPath[kind]
		if !ok {
			continue
		}
		spec := root
		for _, k := range specPath {
			spec, _ = lookup(spec, k)
			if spec == nil {
				break
			}
		}
		if spec == nil {
			continue
		}
		for _, list := range []string{"containers", "initContainers"} {
			seq, _ := lookup(spec, list)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				continue
			}
			for _, c := range seq.Content {
				mem := c
				for _, k := range []string{"resources", "limits", "memory"} {
					mem, _ = lookup(mem, k)
					if mem == nil {
						break
					}
				}
				if mem == nil || mem.Kind != yaml.ScalarNode || mem.Line != line {
					continue
				}
				if mem.Value != old {
					return "", "", "", fmt.Errorf("line %d of the base manifest holds %s, not the %s the diff removes: the PR is based on another version", line, mem.Value, old)
				}
				md, _ := lookup(root, "metadata")
				return scalarAt(md, "name"), scalarAt(c, "name"), commandText(c), nil
			}
		}
	}
	return "", "", "", fmt.Errorf("line %d of the base manifest is not a container's resources.limits.memory", line)
}

// commandText joins a container's command and args (and the values of
// its env, where inline scripts also hide).
func commandText(c *yaml.Node) string {
	var parts []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			parts = append(parts, n.Value)
		case yaml.SequenceNode, yaml.MappingNode:
			for _, x := range n.Content {
				walk(x)
			}
		}
	}
	for _, k := range []string{"command", "args"} {
		v, _ := lookup(c, k)
		walk(v)
	}
	return strings.Join(parts, "\n")
}

var (
	loopRE = regexp.MustCompile(`(?i)\bwhile\s+(true|1|:)\b|\bwhile\s+True\s*:|\bfor\s*\(\s*;\s*;\s*\)|\bfor\s*\{|\bloop\s*\{|itertools\.count\(|setInterval\(`)
	growRE = regexp.MustCompile(`\.append\(|\.extend\(|\.push\(|\+=\s*(\[|"|'|b"|b'|bytearray|bytes\(|str\()|=\s*append\(|\.add\(|\.put\(|\[\s*\S+\s*\]\s*=[^=]`)
	// bounds inside the loop body
	boundRE = regexp.MustCompile(`\.pop\(|\.popleft\(|\.clear\(\)|\bdel\s|\[\s*-\d+\s*:\s*\]|=\s*\[\s*\]|\bbreak\b|\bexit\b|\.truncate\(`)
	// bounds declared anywhere (a capped container or cache)
	capRE = regexp.MustCompile(`maxlen|\bevict|\bLRU\b|\blru_cache\b|\bmaxsize\b`)
)

// unboundedGrowth reports why a container's inline program grows memory
// forever, or "". It is a heuristic for the pattern that bit (a
// cache-warmer appending 16MiB to a list in an endless loop): an endless
// loop whose body adds to something and never removes, clears or leaves.
func unboundedGrowth(script string) string {
	loc := loopRE.FindStringIndex(script)
	if loc == nil {
		return ""
	}
	body := script[loc[0]:]
	g := growRE.FindString(body)
	if g == "" {
		return ""
	}
	if boundRE.MatchString(body) || capRE.MatchString(script) {
		return ""
	}
	return fmt.Sprintf("runs an endless loop (%q) that adds to memory (%q) and never frees it", strings.TrimSpace(script[loc[0]:loc[1]]), strings.TrimSpace(g))
}

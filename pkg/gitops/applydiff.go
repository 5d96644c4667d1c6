package gitops

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// applyDiff applies a one-file diff to base, checking every context and
// removed line against base. It is how a gate sees the file the PR would
// produce without trusting the branch.
func applyDiff(base []byte, fd fileDiff) ([]byte, error) {
	lines := strings.SplitAfter(string(base), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out strings.Builder
	next := 0 // index into lines of the next unconsumed base line
	for _, h := range fd.Hunks {
		start := h.OldStart - 1
		if h.OldCount == 0 {
			start = h.OldStart // "-N,0": insertion after line N
		}
		if start < next || start > len(lines) {
			return nil, fmt.Errorf("hunk at old line %d is out of order or outside the file", h.OldStart)
		}
		for ; next < start; next++ {
			out.WriteString(lines[next])
		}
		for _, l := range h.Lines {
			text := l.Text
			if !l.NoEOL {
				text += "\n"
			}
			switch l.Op {
			case ' ', '-':
				if next >= len(lines) || lines[next] != text {
					return nil, fmt.Errorf("the diff does not apply: line %d of the base file is not %q", next+1, clip(l.Text))
				}
				if l.Op == ' ' {
					out.WriteString(text)
				}
				next++
			case '+':
				out.WriteString(text)
			}
		}
	}
	for ; next < len(lines); next++ {
		out.WriteString(lines[next])
	}
	return []byte(out.String()), nil
}

var limitPathRE = regexp.MustCompile(`\.(containers|initContainers)\[\d+\]\.resources\.limits\.memory$`)

// VerifyDiffOnManifest applies a +1/−1 memory diff to base (the file as it
// is on the base branch) and checks, on the parsed YAML, that exactly one
// value changed and that it is a container's resources.limits.memory. It
// catches what a line-level check cannot see: a "memory: 32Mi" line inside a
// block scalar, or an anchored value that other containers share.
func VerifyDiffOnManifest(base []byte, diff string) error {
	files, err := parseUnifiedDiff(diff)
	if err != nil {
		return notTrivial("the diff does not parse: %v", err)
	}
	if len(files) != 1 {
		return notTrivial("the diff touches %d files", len(files))
	}
	after, err := applyDiff(base, files[0])
	if err != nil {
		return notTrivial("%v", err)
	}
	if err := checkSource(base); err != nil {
		return notTrivial("base file: %v", err)
	}
	b, err := decodeValues(base)
	if err != nil {
		return notTrivial("base file: %v", err)
	}
	a, err := decodeValues(after)
	if err != nil {
		return notTrivial("the changed file does not parse as YAML: %v", err)
	}
	if len(a) != len(b) {
		return notTrivial("the change turns %d YAML documents into %d", len(b), len(a))
	}
	var diffs []string
	for i := range b {
		leafDiffs(fmt.Sprintf("doc%d", i+1), b[i], a[i], &diffs)
	}
	if len(diffs) != 1 {
		return notTrivial("the change alters %d values in the parsed YAML (%s); a memory bump alters one", len(diffs), clip(strings.Join(diffs, ", ")))
	}
	if !limitPathRE.MatchString(diffs[0]) {
		return notTrivial("the value that changes is %s, not a container's resources.limits.memory", diffs[0])
	}
	return nil
}

func decodeValues(src []byte) ([]any, error) {
	docs, err := decodeNodes(src)
	if err != nil {
		return nil, err
	}
	return nodesToValues(docs)
}

// mapDiffs is leafDiffs for two mappings (ok: b is a mapping of the same
// key type); a different key count is one difference at path.
func mapDiffs[K comparable](path string, av, bv map[K]any, ok bool, out *[]string) {
	if !ok || len(av) != len(bv) {
		*out = append(*out, path)
		return
	}
	for k, x := range av {
		p := fmt.Sprintf("%s.%v", path, k)
		y, ok := bv[k]
		if !ok {
			*out = append(*out, p)
			continue
		}
		leafDiffs(p, x, y, out)
	}
}

// leafDiffs appends to out the paths where a and b differ. A map or list
// whose shape differs counts as one difference at its path.
func leafDiffs(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		mapDiffs(path, av, bv, ok, out)
	case map[any]any:
		// A mapping with a key that is not a string (`{memory: 1Gi,0}` has
		// the key 0): compared like the string-keyed kind, keys printed.
		bv, ok := b.(map[any]any)
		mapDiffs(path, av, bv, ok, out)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			*out = append(*out, path)
			return
		}
		for i := range av {
			leafDiffs(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
	}
}

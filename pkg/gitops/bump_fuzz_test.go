package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzBumpMemory: for any input, BumpMemory either refuses, or its output
// differs from the input in one line only, in the bytes of the old value
// only, and parses to the same documents except for that one value, which
// sits at …resources.limits.memory and is 1×–2× the old one. The check is
// written independently of BumpMemory's own verification.
func FuzzBumpMemory(f *testing.F) {
	seeds := []struct{ file, kind, wl, c string }{
		{"block.yaml", "Deployment", "api", "api"},
		{"flow.yaml", "Deployment", "oomkill", "app"},
		{"multidoc.yaml", "Deployment", "worker", "worker"},
		{"twocontainers.yaml", "StatefulSet", "db", "exporter"},
		{"blockscalar.yaml", "CronJob", "cache-warmer", "warmer"},
		{"quoted.yaml", "DaemonSet", "node-agent", "sidecar"},
		{"anchors.yaml", "Deployment", "anchored", "c"},
		{"anchors.yaml", "Deployment", "anchored", "m"},
		{"oomkill.yaml", "Deployment", "oomkill", "app"},
	}
	for _, s := range seeds {
		src, err := os.ReadFile(filepath.Join("testdata", "bump", s.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src, s.kind, s.wl, s.c, 1.5)
	}
	// Positions: line breaks libyaml counts (CR, NEL, LS, PS), characters
	// wider than a byte before the value on its line, tabs.
	for _, s := range []string{
		"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: 1Gi}}}]}\n",
		"kind: Pod\rmetadata: {name: p}\r# lone CR\rspec: {containers: [{name: c, resources: {limits: {memory: 1Gi}}}]}\r",
		"kind: Pod\nmetadata: {name: p, x: \"a\u2028b\u0085c\"}\nspec: {containers: [{name: c, x: \"\u0085\", resources: {limits: {memory: 1Gi}}}]}\n",
		"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{x: \"\u00fc\u2603\", name: c, resources: {limits: {memory: 1Gi}}}]}\n",
		"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: \t1Gi}}}]}\n",
		"\ufeff%YAML 1.1\n---\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {? memory : \"1Gi\"}}}]}\n...\n",
	} {
		f.Add([]byte(s), "Pod", "p", "c", 2.0)
	}
	f.Fuzz(func(t *testing.T, src []byte, kind, wl, c string, factor float64) {
		out, old, nv, err := BumpMemory(src, kind, wl, c, factor)
		if err != nil {
			if out != nil {
				t.Fatalf("refusal with output: %v", err)
			}
			return
		}
		checkOneValueChanged(t, src, out, old, nv)
	})
}

func checkOneValueChanged(t *testing.T, src, out []byte, old, nv string) {
	t.Helper()
	// Bytes: out is src with one occurrence of old replaced by nv.
	p := 0
	for p < len(src) && p < len(out) && src[p] == out[p] {
		p++
	}
	s := 0
	for s < len(src)-p && s < len(out)-p && src[len(src)-1-s] == out[len(out)-1-s] {
		s++
	}
	// Widen the differing span to the whole old/new tokens.
	i, j := p, len(src)-s
	for i > 0 && isQuantityByte(src[i-1]) {
		i--
	}
	for j < len(src) && isQuantityByte(src[j]) {
		j++
	}
	tail := len(src) - j
	if string(src[i:j]) != old || string(out[i:len(out)-tail]) != nv || !bytes.Equal(src[:i], out[:i]) || !bytes.Equal(src[j:], out[len(out)-tail:]) {
		t.Fatalf("the edit is not exactly %q → %q:\nin:  %q\nout: %q", old, nv, src, out)
	}
	if bytes.ContainsAny(src[i:j], "\r\n") || bytes.ContainsAny([]byte(nv), "\r\n") {
		t.Fatalf("the edited span crosses a line")
	}
	// Ratio.
	ob, err1 := parseMemory(old)
	nb, err2 := parseMemory(nv)
	if err1 != nil || err2 != nil || !ratioWithin(ob, nb) {
		r, _ := new(big.Rat).Quo(nb, ob).Float64()
		t.Fatalf("ratio %s → %s is %v (errors %v %v)", old, nv, r, err1, err2)
	}
	// Data: every document equal but one leaf.
	before, err := decodeAll(src)
	if err != nil {
		t.Fatalf("accepted input that does not parse: %v", err)
	}
	after, err := decodeAll(out)
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	if len(before) != len(after) {
		t.Fatalf("document count %d → %d", len(before), len(after))
	}
	var diffs []string
	for d := range before {
		leafDiffs(fmt.Sprintf("doc%d", d), before[d], after[d], &diffs)
	}
	if len(diffs) != 1 || !strings.HasSuffix(diffs[0], ".resources.limits.memory") {
		t.Fatalf("want exactly one changed value at resources.limits.memory, got %q", diffs)
	}
}

func isQuantityByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '.'
}

func decodeAll(b []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// FuzzBumpMemoryPositions builds valid-looking manifests around fuzzed
// text — a comment above, a quoted string before the value on its own line,
// the line ending, the quoting — so that most inputs parse and the edit's
// position arithmetic (characters vs bytes, line breaks libyaml counts) is
// exercised on accepted edits, not just refusals.
func FuzzBumpMemoryPositions(f *testing.F) {
	f.Add("plain comment", "x", uint8(0), uint8(0), "32Mi")
	f.Add("ü☃ é", "日本語 \u2028 x", uint8(1), uint8(1), "256Mi")
	f.Add("\t#", "a\tb \u0085 c", uint8(2), uint8(2), "1Gi")
	f.Add("", "\u00a0\u200b", uint8(3), uint8(0), "100M")
	f.Fuzz(func(t *testing.T, comment, before string, eol, quote uint8, value string) {
		src := positionsManifest(comment, before, eol, quote, value)
		for _, c := range []string{"c", "d"} {
			out, old, nv, err := BumpMemory(src, "Deployment", "w", c, 0)
			if err != nil {
				continue
			}
			checkOneValueChanged(t, src, out, old, nv)
		}
	})
}

// positionsManifest is FuzzBumpMemoryPositions' template: Deployment w with
// container c (flow style, a quoted string before the value on its line)
// and container d (block style, a comment after the value).
func positionsManifest(comment, before string, eol, quote uint8, value string) []byte {
	nl := []string{"\n", "\r\n", "\r"}[eol%3]
	q := []string{"", `"`, "'"}[quote%3]
	before = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ", "\r", " ").Replace(before)
	lines := []string{
		"# " + strings.NewReplacer("\n", " ", "\r", " ", "\u0085", " ", "\u2028", " ", "\u2029", " ").Replace(comment),
		"apiVersion: apps/v1",
		"kind: Deployment",
		"metadata: {name: w, annotations: {note: \"" + before + "\"}}",
		"spec:",
		"  template:",
		"    spec:",
		"      containers:",
		"      - {name: c, env: [{name: X, value: \"" + before + "\"}], resources: {requests: {memory: " + q + value + q + "}, limits: {cpu: 1, memory: " + q + value + q + "}}}",
		"      - name: d",
		"        resources:",
		"          limits:",
		"            memory: " + q + value + q + " # " + strings.NewReplacer("\u0085", " ", "\u2028", " ", "\u2029", " ").Replace(before),
	}
	return []byte(strings.Join(lines, nl) + nl)
}

// The position seeds must be accepted edits, or the target only ever
// exercises refusals.
func TestPositionsSeedsAccepted(t *testing.T) {
	t.Parallel()
	for _, s := range []struct {
		comment, before string
		eol, quote      uint8
		value, want     string
	}{
		{"plain comment", "x", 0, 0, "32Mi", "48Mi"},
		{"ü☃ é", "日本語 \u2028 x", 1, 1, "256Mi", "384Mi"},
		{"\t#", "a\tb \u0085 c", 2, 2, "1Gi", "1536Mi"},
		{"", "\u00a0\u200b", 0, 0, "100M", "144Mi"},
	} {
		src := positionsManifest(s.comment, s.before, s.eol, s.quote, s.value)
		for _, c := range []string{"c", "d"} {
			out, old, nv, err := BumpMemory(src, "Deployment", "w", c, 0)
			if err != nil || nv != s.want {
				t.Fatalf("%q container %s: %s → %s, %v\n%q", s.before, c, old, nv, err, src)
			}
			checkOneValueChanged(t, src, out, old, nv)
		}
	}
}

package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What comes back from a model is untrusted text: the reasoning split,
// the caps' cut and the report parser take anything without panicking,
// and keep their promises.

func FuzzSplitThink(f *testing.F) {
	for _, s := range []string{"", "plain answer", "<think>a</think>b", "a</think>b", "<think>never closed", "<thinking>x</thinking> y <think>z",
		"</think></think><think>", "x <think>a<think>b</think>c</think> d", "think about it"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		answer, reasoning := splitThink(s)
		for _, tag := range []string{"<think>", "</think>", "<thinking>", "</thinking>"} {
			if strings.Contains(answer, tag) {
				t.Fatalf("splitThink(%q) left %s in the answer %q", s, tag, answer)
			}
		}
		if !strings.Contains(s, "think") && (answer != s || reasoning != "") {
			t.Fatalf("splitThink(%q) changed an answer without reasoning: %q / %q", s, answer, reasoning)
		}
	})
}

func FuzzCutMiddle(f *testing.F) {
	f.Add("héllo wörld, a long enough text to cut", 10)
	f.Add(strings.Repeat("x", 5000), 1000)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		out := cutMiddle(s, max, func(cut int) string { return "[cut]" })
		n := utf8.RuneCountInString(s)
		switch {
		case max == 0 || n <= max:
			if out != s {
				t.Fatalf("cutMiddle(%d runes, %d) changed a text within the budget", n, max)
			}
		case max >= 20 && utf8.RuneCountInString(out) > max:
			t.Fatalf("cutMiddle(%d runes, %d) = %d runes", n, max, utf8.RuneCountInString(out))
		}
	})
}

func FuzzParseReport(f *testing.F) {
	for _, s := range []string{`{"healthy":true}`, "Here: {\"healthy\":false,\"findings\":[]} done", "```json\n{}\n```", "{ {", "}{", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := parseReport(s)
		if (rep == nil) == (err == nil) {
			t.Fatalf("parseReport(%q) = %v, %v", s, rep, err)
		}
	})
}

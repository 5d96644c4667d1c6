package safetext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "Back-off restarting failed container", 100, "Back-off restarting failed container"},
		{"newlines and tabs", "line one\nline two\r\n\tindented", 100, "line one line two indented"},
		{"runs collapsed and trimmed", "  a   \n\n  b  ", 100, "a b"},
		{"ESC sequence", "\x1b[31mred\x1b[0m alert", 100, "[31mred[0m alert"},
		{"bidi override", "file\u202Etxt.exe", 100, "filetxt.exe"},
		{"zero width and isolates", "a\u200Bb\u2066c\u2069d\uFEFF", 100, "abcd"},
		{"C1 control", "a\u0085b\u009bc", 100, "a bc"},
		{"invalid utf8", "ok\xff\xfeend", 100, "ok\uFFFD\uFFFDend"},
		{"line separator", "a\u2028b", 100, "a b"},
		{"bounded with ellipsis", "abcdefghij", 5, "abcd…"},
		{"exactly max", "abcde", 5, "abcde"},
		{"cut drops trailing space", "abc defgh", 5, "abc…"},
		{"max one", "abc", 1, "…"},
		{"unbounded", strings.Repeat("x", 300), 0, strings.Repeat("x", 300)},
		{"multibyte bound counts runes", "ééééé", 3, "éé…"},
		{"empty", "", 10, ""},
		{"only controls", "\x00\x1b\u202e", 10, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Clean(tc.in, tc.max); got != tc.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

func TestCleanBlock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"keeps lines", "a\nb\n", 100, "a\nb\n"},
		{"crlf and cr", "a\r\nb\rc", 100, "a\nb\nc"},
		{"tabs become spaces", "k:\tv", 100, "k: v"},
		{"drops ESC and bidi", "\x1b[2Jhi\u202Ethere", 100, "[2Jhithere"},
		{"bounded", "abcdef", 3, "abc\n… [3 more characters cut]"},
		{"invalid utf8", "\xc3(", 100, "\uFFFD("},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := CleanBlock(tc.in, tc.max); got != tc.want {
				t.Errorf("CleanBlock(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

// checkLine asserts the invariants of Clean's output.
func checkLine(t *testing.T, in, out string, max int) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 out of %q: %q", in, out)
	}
	if max > 0 && utf8.RuneCountInString(out) > max {
		t.Fatalf("%d runes > max %d: %q", utf8.RuneCountInString(out), max, out)
	}
	if strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") || strings.Contains(out, "  ") {
		t.Fatalf("untrimmed or uncollapsed spaces: %q", out)
	}
	for _, r := range out {
		if r != ' ' && unicode.IsSpace(r) {
			t.Fatalf("whitespace %U kept: %q", r, out)
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			t.Fatalf("control/format %U kept: %q", r, out)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b[31mred", "a\u202eb", "\xff\xfe", "a\n\tb", "  x  ", "é\u200bé",
		strings.Repeat("long text ", 200), "\u2066\u2069\ufeff", "\r\n\r\n", "\U000E0041tag",
	} {
		f.Add(s, 10)
		f.Add(s, 1)
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1000 || max < -1 {
			max %= 1000
		}
		out := Clean(s, max)
		checkLine(t, s, out, max)
		if again := Clean(out, max); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
		// A cut happens only when the cleaned text does not fit.
		if full := Clean(s, 0); max > 0 && utf8.RuneCountInString(full) <= max && full != out {
			t.Fatalf("cut although it fits: %q vs %q", out, full)
		}
		block := CleanBlock(s, max)
		if !utf8.ValidString(block) {
			t.Fatalf("CleanBlock invalid UTF-8: %q", block)
		}
		for _, r := range block {
			if r == '\n' || r == ' ' {
				continue
			}
			if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("CleanBlock kept %U: %q", r, block)
			}
		}
	})
}

package pulse

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// want is one expected task; Index and Key are checked separately.
type want struct {
	cadence Cadence
	text    string
	line    int
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture  string
		tasks    []want
		warnings []string // substrings, one per expected warning, in order
		errLine  int      // 0: no error expected
		errMsg   string   // substring of the error message
	}{
		{
			fixture: "sections.md",
			tasks: []want{
				{Continuous, "Sweep the cluster.", 9},
				{Continuous, "Check the alert queue.", 10},
				{Daily, "Tidy memory.", 14},
				{Weekly, "Review the week's trends.", 18},
			},
		},
		{
			fixture: "continuation.md",
			tasks: []want{
				{Continuous, "Health sweep. Call cluster_problems first, then at most one follow-up read, then decide.", 3},
				{Continuous, "Second task indented deeper still continues it.", 6},
				{Continuous, "Third task, with a blank line inside. This indented paragraph still belongs to the third task. And so does this line.", 9},
			},
		},
		{fixture: "nested.md", errLine: 4, errMsg: "nested bullet"},
		{fixture: "empty.md"},
		{
			fixture: "unknown_heading.md",
			tasks: []want{
				{Continuous, "Real task.", 3},
				{Weekly, "Weekly task.", 17},
			},
			warnings: []string{
				`unknown_heading.md:5: unknown section "## Hourly" ignored (known: Continuous, Daily, Weekly); its 2 bullet(s) will not run`,
				`unknown_heading.md:11: unknown section "## Notes" ignored`,
			},
		},
		{fixture: "outside_section.md", errLine: 3, errMsg: "bullet outside a section"},
		{fixture: "lazy_continuation.md", errLine: 4, errMsg: "unindented text right after the task on line 3"},
		{fixture: "orphan_indent.md", errLine: 4, errMsg: "indented text belongs to no task"},
		{
			fixture: "prose.md",
			tasks:   []want{{Continuous, "Sweep.", 5}},
			warnings: []string{
				`prose.md:3: text outside a bullet is not a task and is ignored: "These run every tick."`,
				`prose.md:7: text outside a bullet is not a task`,
			},
		},
		{fixture: "duplicate.md", errLine: 5, errMsg: "duplicate daily task: same text as the task on line 3"},
		{fixture: "unclosed_comment.md", errLine: 4, errMsg: "never closed"},
		{fixture: "empty_bullet.md", errLine: 3, errMsg: "empty task"},
		{fixture: "crlf.md", tasks: []want{{Continuous, "Windows line endings continue here.", 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			tasks, warnings, err := Parse(tc.fixture, data)

			if tc.errLine != 0 {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *ParseError", err)
				}
				if pe.Line != tc.errLine || pe.File != tc.fixture || !strings.Contains(pe.Msg, tc.errMsg) {
					t.Fatalf("err = %q, want %s:%d: …%s…", err, tc.fixture, tc.errLine, tc.errMsg)
				}
				if prefix := tc.fixture + ":" + strconv.Itoa(tc.errLine) + ": "; !strings.HasPrefix(err.Error(), prefix) {
					t.Fatalf("Error() = %q, want prefix %q", err, prefix)
				}
				if tasks != nil || warnings != nil {
					t.Fatalf("on error got tasks %v warnings %v, want none", tasks, warnings)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(tasks) != len(tc.tasks) {
				t.Fatalf("got %d tasks %+v, want %d", len(tasks), tasks, len(tc.tasks))
			}
			for i, w := range tc.tasks {
				got := tasks[i]
				if got.Index != i || got.Cadence != w.cadence || got.Text != w.text || got.Line != w.line {
					t.Errorf("task %d = {%d %s %q line %d}, want {%d %s %q line %d}",
						i, got.Index, got.Cadence, got.Text, got.Line, i, w.cadence, w.text, w.line)
				}
				if got.Key != TaskKey(w.cadence, w.text) {
					t.Errorf("task %d key = %q, want TaskKey = %q", i, got.Key, TaskKey(w.cadence, w.text))
				}
			}
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings = %q, want %d matching %q", warnings, len(tc.warnings), tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestTaskKey(t *testing.T) {
	t.Parallel()
	keyRE := regexp.MustCompile(`^(continuous|daily|weekly)-[0-9a-f]{12}$`)
	a := TaskKey(Continuous, "Sweep the cluster.")
	tests := []struct {
		name string
		got  string
		same bool
	}{
		{"same text, same key", TaskKey(Continuous, "Sweep the cluster."), true},
		{"whitespace does not matter", TaskKey(Continuous, "  Sweep   the\tcluster. "), true},
		{"other cadence, other key", TaskKey(Weekly, "Sweep the cluster."), false},
		{"reworded, other key", TaskKey(Continuous, "Sweep the whole cluster."), false},
	}
	for _, tc := range tests {
		if !keyRE.MatchString(tc.got) {
			t.Errorf("%s: key %q does not match %s", tc.name, tc.got, keyRE)
		}
		if (tc.got == a) != tc.same {
			t.Errorf("%s: %q vs %q, same = %v, want %v", tc.name, tc.got, a, tc.got == a, tc.same)
		}
	}
}

// A task keeps its key when other tasks are added above it: the pulse state
// (last run per task) must survive unrelated edits.
func TestParseKeyStableAcrossEdits(t *testing.T) {
	t.Parallel()
	before := "## Weekly\n\n- Trend review.\n"
	after := "<!-- new note -->\n## Continuous\n\n- New sweep.\n\n## Weekly\n\n- Another weekly task.\n- Trend review.\n"
	t1, _, err := Parse("PULSE.md", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := Parse("PULSE.md", []byte(after))
	if err != nil {
		t.Fatal(err)
	}
	if len(t1) != 1 || len(t2) != 3 {
		t.Fatalf("got %d and %d tasks, want 1 and 3", len(t1), len(t2))
	}
	if t1[0].Key != t2[2].Key || t2[2].Index != 2 || t2[2].Line != 9 {
		t.Fatalf("before %+v, after %+v: the key should be unchanged", t1[0], t2[2])
	}
}

func TestParseCadence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Cadence
		ok   bool
	}{
		{"Continuous", Continuous, true},
		{" daily ", Daily, true},
		{"WEEKLY", Weekly, true},
		{"Hourly", "", false},
		{"Weekly tasks", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := ParseCadence(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseCadence(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

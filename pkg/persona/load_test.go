package persona

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kubecrew/kubecrew/pkg/pulse"
)

const validSkill = "---\nname: health-sweep\ndescription: The two-call sweep.\n---\n# Health sweep\nBody.\n"

// validFS is a minimal persona tree that loads cleanly; each error case
// changes one thing.
func validFS() fstest.MapFS {
	return fstest.MapFS{
		"noor/AGENTS.md":                    {Data: []byte("# Noor\nThe manual.\n")},
		"noor/Identity.md":                  {Data: []byte("You are Noor.\n")},
		"noor/PULSE.md":                     {Data: []byte("<!-- rules -->\n## Continuous\n\n- Sweep.\n")},
		"noor/agent.env":                    {Data: []byte("# defaults\nAGENT_TOOLS=cluster_problems, post_report\nPULSE_ENABLED=true\n")},
		"noor/skills/health-sweep/SKILL.md": {Data: []byte(validSkill)},
	}
}

func TestLoadValid(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"noor", "platform-sre", "NOOR"} {
		p, err := Load(validFS(), name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if p.Info != (Info{"noor", "platform-sre"}) {
			t.Errorf("Info = %+v", p.Info)
		}
		if len(p.Pulse) != 1 || p.Pulse[0].Cadence != pulse.Continuous || p.Pulse[0].Text != "Sweep." || p.Pulse[0].Line != 4 {
			t.Errorf("Pulse = %+v", p.Pulse)
		}
		s, ok := p.Skill("health-sweep")
		if !ok || s.Description != "The two-call sweep." || s.Body != "# Health sweep\nBody." ||
			s.Path != "noor/skills/health-sweep/SKILL.md" || s.Raw != validSkill {
			t.Errorf("Skill = %+v, %v", s, ok)
		}
		if _, ok := p.Skill("nope"); ok {
			t.Error("Skill(nope) found")
		}
		if e, ok := p.Setting("PULSE_ENABLED"); !ok || e.Value != "true" || e.File != "noor/agent.env" || e.Line != 3 {
			t.Errorf("Setting(PULSE_ENABLED) = %+v, %v", e, ok)
		}
		if got := strings.Join(p.DeclaredTools(), ","); got != "cluster_problems,post_report" {
			t.Errorf("DeclaredTools = %q", got)
		}
		if len(p.Warnings) != 0 {
			t.Errorf("Warnings = %q, want none", p.Warnings)
		}
		var paths []string
		for _, d := range p.Documents() {
			paths = append(paths, d.Path)
		}
		if got := strings.Join(paths, ","); got != "noor/AGENTS.md,noor/Identity.md,noor/PULSE.md,noor/skills/health-sweep/SKILL.md" {
			t.Errorf("Documents paths = %s", got)
		}
	}
}

func TestLoadOptionalFiles(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"ada/AGENTS.md":   {Data: []byte("manual")},
		"ada/Identity.md": {Data: []byte("identity")},
	}
	p, err := Load(fsys, "backend-architect")
	if err != nil {
		t.Fatal(err)
	}
	if p.Pulse != nil || p.Env != nil || p.Skills != nil || p.DeclaredTools() != nil || len(p.Documents()) != 2 {
		t.Errorf("optional parts not empty: %+v", p)
	}
}

func TestLoadWarnings(t *testing.T) {
	t.Parallel()
	fsys := validFS()
	fsys["noor/skills/README.md"] = &fstest.MapFile{Data: []byte("stray")}
	fsys["noor/skills/.gitkeep"] = &fstest.MapFile{}
	fsys["noor/PULSE.md"] = &fstest.MapFile{Data: []byte("## Continuous\n- Sweep.\n\n## Hourly\n- ignored\n")}
	p, err := Load(fsys, "noor")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"noor/PULSE.md:4: unknown section \"## Hourly\"",
		"noor/skills/README.md: ignored: not a skill directory",
	}
	if len(p.Warnings) != len(want) {
		t.Fatalf("Warnings = %q, want %d", p.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(p.Warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, p.Warnings[i], w)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	skill := "noor/skills/health-sweep/SKILL.md"
	tests := []struct {
		name    string
		persona string
		change  func(fstest.MapFS)
		// want: substrings of the error; the first also names the file and
		// line checked through errors.As.
		want     []string
		wantFile string
		wantLine int
	}{
		{
			name: "unknown persona", persona: "bob", change: func(fstest.MapFS) {},
			want: []string{`unknown persona "bob"`, "noor (platform-sre)", "ada (backend-architect)"},
		},
		{
			name: "persona directory missing", persona: "sol", change: func(fstest.MapFS) {},
			want: []string{"sol/: persona directory not found"}, wantFile: "sol/",
		},
		{
			name: "missing AGENTS.md", change: func(f fstest.MapFS) { delete(f, "noor/AGENTS.md") },
			want: []string{"noor/AGENTS.md: missing (required)"}, wantFile: "noor/AGENTS.md",
		},
		{
			name: "blank AGENTS.md", change: func(f fstest.MapFS) { f["noor/AGENTS.md"] = &fstest.MapFile{Data: []byte(" \n\n")} },
			want: []string{"noor/AGENTS.md: is empty"}, wantFile: "noor/AGENTS.md",
		},
		{
			name: "missing Identity.md", change: func(f fstest.MapFS) { delete(f, "noor/Identity.md") },
			want: []string{"noor/Identity.md: missing (required)"}, wantFile: "noor/Identity.md",
		},
		{
			name: "Identity.md over 10 lines",
			change: func(f fstest.MapFS) {
				f["noor/Identity.md"] = &fstest.MapFile{Data: []byte(strings.Repeat("line\n", 11) + "\n\n")}
			},
			want: []string{"noor/Identity.md:11: Identity.md has 11 lines; the limit is 10"}, wantFile: "noor/Identity.md", wantLine: 11,
		},
		{
			name:   "SKILL.md without front matter",
			change: func(f fstest.MapFS) { f[skill] = &fstest.MapFile{Data: []byte("# Health sweep\nname: health-sweep\n")} },
			want:   []string{skill + ":1: no front matter"}, wantFile: skill, wantLine: 1,
		},
		{
			name: "front matter never closed",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\ndescription: d\n# body\n")}
			},
			want: []string{skill + ":1: front matter opened here is never closed"}, wantFile: skill, wantLine: 1,
		},
		{
			name:   "front matter without name",
			change: func(f fstest.MapFS) { f[skill] = &fstest.MapFile{Data: []byte("---\ndescription: d\n---\nbody\n")} },
			want:   []string{skill + ":1: front matter has no name"}, wantFile: skill, wantLine: 1,
		},
		{
			name:   "front matter without description",
			change: func(f fstest.MapFS) { f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\n---\nbody\n")} },
			want:   []string{skill + ":1: front matter has no description"}, wantFile: skill, wantLine: 1,
		},
		{
			name: "empty description",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\ndescription: \"  \"\n---\nbody\n")}
			},
			want: []string{skill + ":3: front matter description is empty"}, wantFile: skill, wantLine: 3,
		},
		{
			name: "name is not a string",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\ndescription: d\nname: [a, b]\n---\nbody\n")}
			},
			want: []string{skill + ":3: front matter name must be a string"}, wantFile: skill, wantLine: 3,
		},
		{
			name: "front matter is not YAML",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\ndescription: [unclosed\n---\nbody\n")}
			},
			want: []string{skill + ":", "front matter is not valid YAML"}, wantFile: skill,
		},
		{
			name: "front matter YAML error on a known line",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\n  bad: indent\ndescription: d\n---\nbody\n")}
			},
			want: []string{skill + ":3: front matter is not valid YAML: mapping values are not allowed"}, wantFile: skill, wantLine: 3,
		},
		{
			name: "skill name differs from directory",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\ndescription: d\nname: sweep\n---\nbody\n")}
			},
			want: []string{skill + `:3: skill name "sweep" does not match its directory "health-sweep"`}, wantFile: skill, wantLine: 3,
		},
		{
			name: "skill without body",
			change: func(f fstest.MapFS) {
				f[skill] = &fstest.MapFile{Data: []byte("---\nname: health-sweep\ndescription: d\n---\n\n")}
			},
			want: []string{skill + ":4: skill has no body"}, wantFile: skill, wantLine: 4,
		},
		{
			name:   "skill directory without SKILL.md",
			change: func(f fstest.MapFS) { f["noor/skills/pvc-reader/pvc_reader.py"] = &fstest.MapFile{Data: []byte("x")} },
			want:   []string{"noor/skills/pvc-reader: skill directory has no SKILL.md"}, wantFile: "noor/skills/pvc-reader",
		},
		{
			name: "malformed agent.env line",
			change: func(f fstest.MapFS) {
				f["noor/agent.env"] = &fstest.MapFile{Data: []byte("# c\nAGENT_TOOLS cluster_problems\n")}
			},
			want: []string{"noor/agent.env:2: expected KEY=VALUE"}, wantFile: "noor/agent.env", wantLine: 2,
		},
		{
			name: "malformed PULSE.md",
			change: func(f fstest.MapFS) {
				f["noor/PULSE.md"] = &fstest.MapFile{Data: []byte("## Daily\n\n- Housekeeping:\n  - prune\n")}
			},
			want: []string{"noor/PULSE.md:4: nested bullet"}, wantFile: "noor/PULSE.md", wantLine: 4,
		},
		{
			name: "every problem reported at once",
			change: func(f fstest.MapFS) {
				delete(f, "noor/AGENTS.md")
				f["noor/agent.env"] = &fstest.MapFile{Data: []byte("oops\n")}
				f["noor/PULSE.md"] = &fstest.MapFile{Data: []byte("- outside\n")}
			},
			want:     []string{"noor/AGENTS.md: missing", "noor/agent.env:1: expected KEY=VALUE", "noor/PULSE.md:1: bullet outside a section"},
			wantFile: "noor/AGENTS.md",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := validFS()
			tc.change(fsys)
			name := tc.persona
			if name == "" {
				name = "noor"
			}
			p, err := Load(fsys, name)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want an error", p.Info)
			}
			if p != nil {
				t.Errorf("Load returned a persona alongside the error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.wantFile == "" {
				return
			}
			file, line := fileLine(err)
			if file != tc.wantFile || (tc.wantLine != 0 && line != tc.wantLine) {
				t.Errorf("error names %s:%d, want %s:%d", file, line, tc.wantFile, tc.wantLine)
			}
		})
	}
}

// fileLine returns the file and line of the first file-naming error in err.
func fileLine(err error) (string, int) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.File, fe.Line
	}
	var pe *pulse.ParseError
	if errors.As(err, &pe) {
		return pe.File, pe.Line
	}
	return "", 0
}

// PERSONA_DIR: the binary loads from os.DirFS, and an edit is seen by the
// next Load (nothing cached).
func TestLoadFromDirFS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, validFS()); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	if _, err := Load(fsys, "noor"); err != nil {
		t.Fatalf("Load from dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "noor", "PULSE.md"), []byte("## Weekly\n\n- Trend review.\n- Second.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(fsys, "noor")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pulse) != 2 || p.Pulse[0].Cadence != pulse.Weekly {
		t.Fatalf("edited PULSE.md not seen: %+v", p.Pulse)
	}
	if err := os.WriteFile(filepath.Join(dir, "noor", "Identity.md"), []byte(strings.Repeat("x\n", 12)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fsys, "noor"); err == nil || !strings.Contains(err.Error(), "noor/Identity.md:11:") {
		t.Fatalf("err = %v, want noor/Identity.md:11", err)
	}
}

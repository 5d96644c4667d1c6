package persona

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pulse"
)

// File names inside a persona directory.
const (
	AgentsFile   = "AGENTS.md"
	IdentityFile = "Identity.md"
	PulseFile    = "PULSE.md"
	EnvFile      = "agent.env"
	SkillsDir    = "skills"
	SkillFile    = "SKILL.md"
)

// MaxIdentityLines bounds Identity.md: it is in every prompt.
const MaxIdentityLines = 10

// Error is a persona file the loader refuses. Line is 0 when the problem is
// the whole file (missing, empty).
type Error = api.FileError

func fileErr(file string, line int, format string, args ...any) error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Persona is one persona's files, loaded and validated.
type Persona struct {
	Info
	AgentsMD   string
	IdentityMD string
	PulseMD    string
	Skills     []Skill
	Env        []EnvVar
	Pulse      []pulse.Task
	// Warnings are problems that do not stop the agent (an unknown PULSE.md
	// section, a stray file in skills/). The agent logs them at start.
	Warnings []string
}

// Document is one persona file's path and text.
type Document struct {
	Path string
	Text string
}

// Load reads and validates the persona named nameOrSlug from fsys, whose root
// holds one directory per persona name (noor/, sol/, …). Required:
// AGENTS.md and Identity.md (at most 10 lines). Optional: PULSE.md,
// agent.env, skills/. All problems found are returned together, each naming
// its file and line; nothing is cached, so a mounted directory edited between
// runs is read afresh by the next Load.
func Load(fsys fs.FS, nameOrSlug string) (*Persona, error) {
	info, err := Resolve(nameOrSlug)
	if err != nil {
		return nil, err
	}
	dir := info.Name
	if st, err := fs.Stat(fsys, dir); err != nil || !st.IsDir() {
		return nil, fileErr(dir+"/", 0, "persona directory not found (the persona root must hold %s/ with %s and %s)", dir, AgentsFile, IdentityFile)
	}

	p := &Persona{Info: info}
	var errs []error

	p.AgentsMD, err = readRequired(fsys, path.Join(dir, AgentsFile))
	errs = appendErr(errs, err)

	identityPath := path.Join(dir, IdentityFile)
	p.IdentityMD, err = readRequired(fsys, identityPath)
	errs = appendErr(errs, err)
	if err == nil {
		if n := countLines(p.IdentityMD); n > MaxIdentityLines {
			errs = append(errs, fileErr(identityPath, MaxIdentityLines+1,
				"%s has %d lines; the limit is %d (it is in every prompt: keep it a short capability sheet)", IdentityFile, n, MaxIdentityLines))
		}
	}

	pulsePath := path.Join(dir, PulseFile)
	if data, ok, err := readOptional(fsys, pulsePath); err != nil {
		errs = append(errs, err)
	} else if ok {
		p.PulseMD = string(data)
		tasks, warnings, err := pulse.Parse(pulsePath, data)
		errs = appendErr(errs, err)
		p.Pulse = tasks
		p.Warnings = append(p.Warnings, warnings...)
	}

	envPath := path.Join(dir, EnvFile)
	if data, ok, err := readOptional(fsys, envPath); err != nil {
		errs = append(errs, err)
	} else if ok {
		env, err := ParseEnv(envPath, data)
		errs = appendErr(errs, err)
		p.Env = env
	}

	skills, warnings, err := loadSkills(fsys, path.Join(dir, SkillsDir))
	errs = appendErr(errs, err)
	p.Skills = skills
	p.Warnings = append(p.Warnings, warnings...)

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Skill returns the skill called name.
func (p *Persona) Skill(name string) (Skill, bool) {
	for _, s := range p.Skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// Setting returns the agent.env entry for key.
func (p *Persona) Setting(key string) (EnvVar, bool) {
	for _, e := range p.Env {
		if e.Key == key {
			return e, true
		}
	}
	return EnvVar{}, false
}

// DeclaredTools is agent.env's AGENT_TOOLS split on commas, trimmed, empty
// entries and repeats dropped, in order. The built-in tools are not in it.
func (p *Persona) DeclaredTools() []string {
	e, ok := p.Setting("AGENT_TOOLS")
	if !ok {
		return nil
	}
	return SplitList(e.Value)
}

// Documents returns every text file of the persona that can reach a prompt:
// AGENTS.md, Identity.md, PULSE.md and each SKILL.md, with their paths.
func (p *Persona) Documents() []Document {
	docs := []Document{
		{Path: path.Join(p.Name, AgentsFile), Text: p.AgentsMD},
		{Path: path.Join(p.Name, IdentityFile), Text: p.IdentityMD},
	}
	if p.PulseMD != "" {
		docs = append(docs, Document{Path: path.Join(p.Name, PulseFile), Text: p.PulseMD})
	}
	for _, s := range p.Skills {
		docs = append(docs, Document{Path: s.Path, Text: s.Raw})
	}
	return docs
}

// SplitList splits a comma list ("a, b,,a") into its trimmed, non-empty,
// first-seen entries ("a", "b").
func SplitList(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" || seen[part] {
			continue
		}
		seen[part] = true
		out = append(out, part)
	}
	return out
}

func readRequired(fsys fs.FS, name string) (string, error) {
	data, ok, err := readOptional(fsys, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fileErr(name, 0, "missing (required)")
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", fileErr(name, 0, "is empty (required)")
	}
	return string(data), nil
}

// readOptional reads name; ok is false when it does not exist.
func readOptional(fsys fs.FS, name string) (data []byte, ok bool, err error) {
	data, err = fs.ReadFile(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fileErr(name, 0, "cannot read: %v", err)
	}
	return data, true, nil
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// countLines counts lines, ignoring trailing blank lines.
func countLines(s string) int {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n \t")
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

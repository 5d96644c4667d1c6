package persona

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Skill is one skills/<name>/SKILL.md. Name and Description go into every
// prompt's skills catalog; Body is loaded on demand.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Body is the text after the front matter, trimmed.
	Body string `json:"-"`
	// Path is the file's path in the persona FS ("noor/skills/health-sweep/SKILL.md").
	Path string `json:"-"`
	// Raw is the whole file, front matter included.
	Raw string `json:"-"`
}

// MaxSkillDescription bounds a description: it is in every prompt.
const MaxSkillDescription = 1024

var skillNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// loadSkills reads every skills/<name>/SKILL.md under dir. A missing skills
// directory means no skills. A sub-directory without SKILL.md is an error (a
// skill that silently does not load is how a persona ends up with none);
// files directly under skills/ are warned about.
func loadSkills(fsys fs.FS, dir string) ([]Skill, []string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fileErr(dir, 0, "cannot read: %v", err)
	}
	var (
		skills   []Skill
		warnings []string
		errs     []error
	)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if !e.IsDir() {
			warnings = append(warnings, fmt.Sprintf("%s: ignored: not a skill directory (skills live in %s/<name>/%s)", path.Join(dir, name), dir, SkillFile))
			continue
		}
		file := path.Join(dir, name, SkillFile)
		data, ok, err := readOptional(fsys, file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			errs = append(errs, fileErr(path.Join(dir, name), 0, "skill directory has no %s", SkillFile))
			continue
		}
		s, err := parseSkill(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.Name != name {
			errs = append(errs, fileErr(file, s.nameLine, "skill name %q does not match its directory %q", s.Name, name))
			continue
		}
		skills = append(skills, s.Skill)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return skills, warnings, nil
}

// parsedSkill carries the line of the name for the directory check.
type parsedSkill struct {
	Skill
	nameLine int
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// ParseSkill parses one SKILL.md: a "---" line, YAML front matter with
// non-empty string name and description, a closing "---" line, and a
// non-empty body. file is used in messages and as the skill's Path.
func ParseSkill(file string, data []byte) (Skill, error) {
	s, err := parseSkill(file, data)
	return s.Skill, err
}

func parseSkill(file string, data []byte) (parsedSkill, error) {
	text := strings.TrimPrefix(strings.ReplaceAll(string(data), "\r\n", "\n"), "\ufeff")
	lines := strings.Split(text, "\n")
	if strings.TrimSpace(lines[0]) != "---" {
		return parsedSkill{}, fileErr(file, 1, "no front matter: %s must start with a \"---\" line, then name: and description:, then \"---\"", SkillFile)
	}
	closing := -1
	for i := 1; i < len(lines); i++ {
		if t := strings.TrimRight(lines[i], " \t"); t == "---" || t == "..." {
			closing = i
			break
		}
	}
	if closing < 0 {
		return parsedSkill{}, fileErr(file, 1, "front matter opened here is never closed with a \"---\" line")
	}
	front := strings.Join(lines[1:closing], "\n")

	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		// yaml counts lines from the start of the front matter, which is
		// file line 2.
		line := 1
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			if n, convErr := strconv.Atoi(m[1]); convErr == nil {
				line = n + 1
				msg = strings.TrimPrefix(strings.Replace(msg, m[0]+": ", "", 1), m[0])
			}
		}
		return parsedSkill{}, fileErr(file, line, "front matter is not valid YAML: %s", msg)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return parsedSkill{}, fileErr(file, 2, "front matter must be a YAML mapping with name: and description:")
	}
	m := doc.Content[0]

	s := parsedSkill{Skill: Skill{Path: file, Raw: string(data)}}
	var err error
	if s.Name, s.nameLine, err = frontString(file, m, "name"); err != nil {
		return parsedSkill{}, err
	}
	if !skillNameRE.MatchString(s.Name) {
		return parsedSkill{}, fileErr(file, s.nameLine, "skill name %q must be lower-case letters, digits and single hyphens", s.Name)
	}
	var descLine int
	if s.Description, descLine, err = frontString(file, m, "description"); err != nil {
		return parsedSkill{}, err
	}
	if n := len([]rune(s.Description)); n > MaxSkillDescription {
		return parsedSkill{}, fileErr(file, descLine, "description is %d characters; the limit is %d (it is in every prompt)", n, MaxSkillDescription)
	}
	s.Body = strings.TrimSpace(strings.Join(lines[closing+1:], "\n"))
	if s.Body == "" {
		return parsedSkill{}, fileErr(file, closing+1, "skill has no body after its front matter")
	}
	return s, nil
}

// frontString finds key in the front-matter mapping m and returns its
// non-empty string value and file line.
func frontString(file string, m *yaml.Node, key string) (string, int, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value != key {
			continue
		}
		line := v.Line + 1 // front matter starts on file line 2
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "") {
			return "", line, fileErr(file, line, "front matter %s must be a string", key)
		}
		val := strings.TrimSpace(v.Value)
		if val == "" {
			return "", line, fileErr(file, line, "front matter %s is empty", key)
		}
		return val, line, nil
	}
	return "", 0, fileErr(file, 1, "front matter has no %s", key)
}

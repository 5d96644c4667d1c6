package manifests

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Instruction is one Dockerfile instruction with continuation lines joined.
type Instruction struct {
	Line int
	Cmd  string // upper case: FROM, COPY, RUN, …
	Args string
	// Stage is the index of the FROM this instruction belongs to.
	Stage int
}

// ParseDockerfile splits a Dockerfile into instructions. Comments and parser
// directives are dropped; `\` continues a line.
func ParseDockerfile(data []byte) ([]Instruction, error) {
	var out []Instruction
	sc := bufio.NewScanner(bytes.NewReader(data))
	var cur strings.Builder
	start, stage := 0, -1
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(trimmed)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, Instruction{Line: start, Cmd: cmd, Args: strings.TrimSpace(args), Stage: stage})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at end of file", start)
	}
	if len(out) == 0 || out[0].Cmd != "FROM" && out[0].Cmd != "ARG" {
		return nil, fmt.Errorf("no FROM")
	}
	return out, nil
}

// Copy is a COPY instruction's parts.
type Copy struct {
	Line    int
	From    string // --from stage, "" for the build context
	Sources []string
	Dest    string
	Stage   int
}

// Copies returns every COPY/ADD instruction.
func Copies(ins []Instruction) ([]Copy, error) {
	var out []Copy
	for _, in := range ins {
		if in.Cmd != "COPY" && in.Cmd != "ADD" {
			continue
		}
		if strings.HasPrefix(in.Args, "[") {
			return nil, fmt.Errorf("line %d: JSON-form COPY is not checked; use the plain form", in.Line)
		}
		c := Copy{Line: in.Line, Stage: in.Stage}
		var parts []string
		for _, f := range strings.Fields(in.Args) {
			if v, ok := strings.CutPrefix(f, "--from="); ok {
				c.From = v
				continue
			}
			if strings.HasPrefix(f, "--") {
				continue
			}
			parts = append(parts, f)
		}
		if len(parts) < 2 {
			return nil, fmt.Errorf("line %d: COPY needs a source and a destination", in.Line)
		}
		c.Sources, c.Dest = parts[:len(parts)-1], parts[len(parts)-1]
		out = append(out, c)
	}
	return out, nil
}

// DockerIgnore is a parsed .dockerignore (the subset of its syntax used here:
// path patterns with *, ?, a leading **/, and ! exceptions).
type DockerIgnore struct {
	patterns []ignorePattern
}

type ignorePattern struct {
	pattern string
	negate  bool
}

// ParseDockerIgnore reads .dockerignore content.
func ParseDockerIgnore(data []byte) (*DockerIgnore, error) {
	d := &DockerIgnore{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		line = strings.TrimPrefix(line, "!")
		line = path.Clean(strings.TrimPrefix(line, "/"))
		if strings.Contains(strings.TrimPrefix(line, "**/"), "**") {
			return nil, fmt.Errorf(".dockerignore:%d: %q: ** is supported only as a leading **/", n+1, line)
		}
		if _, err := path.Match(strings.TrimPrefix(line, "**/"), ""); err != nil {
			return nil, fmt.Errorf(".dockerignore:%d: %q: %w", n+1, line, err)
		}
		d.patterns = append(d.patterns, ignorePattern{pattern: line, negate: neg})
	}
	return d, nil
}

// Excluded reports whether the slash-separated path rel is left out of the
// build context: a pattern matches the path or any of its parent directories;
// the last matching pattern wins.
func (d *DockerIgnore) Excluded(rel string) bool {
	excluded := false
	for _, p := range d.patterns {
		if p.matches(rel) {
			excluded = !p.negate
		}
	}
	return excluded
}

func (p ignorePattern) matches(rel string) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if rest, ok := strings.CutPrefix(p.pattern, "**/"); ok {
			// **/x matches x at any depth
			for j := 0; j < i; j++ {
				if ok, _ := path.Match(rest, strings.Join(parts[j:i], "/")); ok {
					return true
				}
			}
			continue
		}
		if ok, _ := path.Match(p.pattern, prefix); ok {
			return true
		}
	}
	return false
}

var (
	goWorkUse     = regexp.MustCompile(`(?m)^\s*\.?/?([A-Za-z0-9_./-]+)\s*$`)
	goWorkVersion = regexp.MustCompile(`(?m)^go (\d+\.\d+)`)
	argGoVersion  = regexp.MustCompile(`^GO_VERSION=(\S+)$`)
	ldflagX       = regexp.MustCompile(`-X ([A-Za-z0-9_./-]+)\.([A-Za-z_][A-Za-z0-9_]*)=`)
)

// GoWorkModules lists the directories of the `use` block of go.work.
func GoWorkModules(data []byte) []string {
	s := string(data)
	i := strings.Index(s, "use (")
	if i < 0 {
		return nil
	}
	block := s[i+len("use ("):]
	if j := strings.Index(block, ")"); j >= 0 {
		block = block[:j]
	}
	var out []string
	for _, m := range goWorkUse.FindAllStringSubmatch(block, -1) {
		out = append(out, strings.TrimPrefix(path.Clean(m[1]), "./"))
	}
	return out
}

// CheckDockerfile checks the Dockerfile at root against the repository: every
// COPY source from the build context exists and is not excluded by
// .dockerignore, every go.work module is copied, nothing under agents/ (the
// embedded persona files) is excluded, the builder's Go matches go.work, each
// `go build` directory is a main package, each -X variable exists, and the
// final stage ships the binaries the manifests run. It returns the problems
// and the binaries the final image holds (absolute paths).
func CheckDockerfile(root string) ([]string, map[string]bool, error) {
	var p problems
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return nil, nil, err
	}
	ins, err := ParseDockerfile(df)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the Dockerfile: %w", err)
	}
	copies, err := Copies(ins)
	if err != nil {
		return nil, nil, fmt.Errorf("the Dockerfile's COPY lines: %w", err)
	}
	ignData, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	ign, err := ParseDockerIgnore(ignData)
	if err != nil {
		return nil, nil, err
	}

	copied := checkCopySources(root, copies, ign, &p)
	gw, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, nil, err
	}
	checkGoWorkCopied(gw, copied, &p)
	checkPersonaFilesShip(root, ign, &p)
	checkGoVersion(ins, gw, &p)
	checkBuilds(root, ins, &p)
	bins := checkFinalStage(ins, copies, &p)
	return p, bins, nil
}

// checkCopySources: COPY sources from the context exist and are in the
// context. It returns the context paths copied (cleaned, no trailing /).
func checkCopySources(root string, copies []Copy, ign *DockerIgnore, p *problems) map[string]bool {
	copied := map[string]bool{}
	for _, c := range copies {
		if c.From != "" {
			continue
		}
		for _, src := range c.Sources {
			clean := path.Clean(strings.TrimPrefix(src, "./"))
			if strings.ContainsAny(src, "*?[") {
				matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(clean)))
				if err != nil {
					p.addf("Dockerfile:%d: COPY %s: %v", c.Line, src, err)
				}
				for _, m := range matches {
					rel, _ := filepath.Rel(root, m)
					copied[filepath.ToSlash(rel)] = true
				}
				continue // an unmatched wildcard is allowed (an optional go.sum)
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(clean))); err != nil {
				p.addf("Dockerfile:%d: COPY %s: not in the repository", c.Line, src)
				continue
			}
			if ign.Excluded(clean) {
				p.addf("Dockerfile:%d: COPY %s: excluded by .dockerignore", c.Line, src)
			}
			copied[clean] = true
		}
	}
	return copied
}

// checkGoWorkCopied: every go.work module is copied: go.work itself, each
// go.mod, each directory.
func checkGoWorkCopied(gw []byte, copied map[string]bool, p *problems) {
	if !copied["go.work"] {
		p.addf("Dockerfile: go.work is not copied")
	}
	for _, m := range GoWorkModules(gw) {
		if !copied[m+"/go.mod"] && !copied[m] {
			p.addf("Dockerfile: module %s (go.work) is not copied", m)
		}
		if !copied[m] && !coveredByParent(copied, m) {
			p.addf("Dockerfile: the sources of module %s are not copied", m)
		}
	}
}

// checkPersonaFilesShip: no persona file is left out of the context (a
// skill that does not ship fails nothing, the agent just lacks it).
func checkPersonaFilesShip(root string, ign *DockerIgnore, p *problems) {
	_ = filepath.WalkDir(filepath.Join(root, "agents"), func(pth string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, pth)
		if ign.Excluded(filepath.ToSlash(rel)) {
			p.addf(".dockerignore excludes %s: persona files are embedded in the agent binary", filepath.ToSlash(rel))
		}
		return nil
	})
}

// checkGoVersion: the builder's Go version is go.work's.
func checkGoVersion(ins []Instruction, gw []byte, p *problems) {
	m := goWorkVersion.FindSubmatch(gw)
	if m == nil {
		return
	}
	want := string(m[1])
	got := ""
	for _, in := range ins {
		if in.Cmd == "ARG" {
			if a := argGoVersion.FindStringSubmatch(in.Args); a != nil {
				got = a[1]
			}
		}
		if in.Cmd == "FROM" && strings.HasPrefix(in.Args, "golang:") && !strings.Contains(in.Args, "${") {
			got = strings.Fields(strings.TrimPrefix(in.Args, "golang:"))[0]
		}
	}
	if got != want && !strings.HasPrefix(got, want+".") && !strings.HasPrefix(got, want+"-") {
		p.addf("Dockerfile: builder Go %q, go.work wants go %s", got, want)
	}
}

// checkBuilds: go build directories are main packages; -X variables exist.
func checkBuilds(root string, ins []Instruction, p *problems) {
	for _, in := range ins {
		if in.Cmd != "RUN" || !strings.Contains(in.Args, "go build") {
			continue
		}
		for _, seg := range strings.Split(in.Args, "&&") {
			seg = strings.TrimSpace(seg)
			if dir, ok := strings.CutPrefix(seg, "cd /src/"); ok {
				dir = strings.Fields(dir)[0]
				if _, err := os.Stat(filepath.Join(root, dir, "main.go")); err != nil {
					p.addf("Dockerfile:%d: go build in %s: no main.go there", in.Line, dir)
				}
			}
		}
		for _, m := range ldflagX.FindAllStringSubmatch(in.Args, -1) {
			pkg, name := m[1], m[2]
			const modPrefix = "github.com/kubecrew/kubecrew/"
			dir, ok := strings.CutPrefix(pkg, modPrefix)
			if !ok {
				p.addf("Dockerfile:%d: -X %s.%s: not a package of this repository", in.Line, pkg, name)
				continue
			}
			if !declaresVar(filepath.Join(root, filepath.FromSlash(dir)), name) {
				p.addf("Dockerfile:%d: -X %s.%s: no `var %s` in %s", in.Line, pkg, name, name, dir)
			}
		}
	}
}

// checkFinalStage: what the final stage ships (returned, absolute paths),
// that its ENTRYPOINT is one of those, and that it runs as non-root.
func checkFinalStage(ins []Instruction, copies []Copy, p *problems) map[string]bool {
	last := ins[len(ins)-1].Stage
	bins := map[string]bool{}
	user := ""
	for _, c := range copies {
		if c.Stage != last || c.From == "" {
			continue
		}
		for _, src := range c.Sources {
			if strings.HasSuffix(c.Dest, "/") {
				bins[path.Join(c.Dest, path.Base(src))] = true
			} else {
				bins[c.Dest] = true
			}
		}
	}
	for _, in := range ins {
		if in.Stage == last && in.Cmd == "USER" {
			user = in.Args
		}
		if in.Stage == last && in.Cmd == "ENTRYPOINT" {
			shipped := false
			for b := range bins {
				shipped = shipped || strings.Contains(in.Args, `"`+b+`"`)
			}
			if !shipped {
				p.addf("Dockerfile:%d: ENTRYPOINT %s is not a binary the image ships", in.Line, in.Args)
			}
		}
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		p.addf("Dockerfile: the final stage must set a non-root USER (the pods run runAsNonRoot)")
	}
	return bins
}

func coveredByParent(copied map[string]bool, dir string) bool {
	for d := path.Dir(dir); d != "." && d != "/"; d = path.Dir(d) {
		if copied[d] {
			return true
		}
	}
	return false
}

func declaresVar(dir, name string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	re := regexp.MustCompile(`(?m)^\s*(var\s+)?` + regexp.QuoteMeta(name) + `\s*(string\s*)?=`)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && re.Match(b) {
			return true
		}
	}
	return false
}

package deployreview

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	shaRE       = regexp.MustCompile(`^[0-9a-f]{40}$`)
	echoRE      = regexp.MustCompile(`(?i)\b(echo|printf|cat|tee|write-host)\b`)
	secretRefRE = regexp.MustCompile(`\$\{\{\s*secrets\.([A-Za-z0-9_]+)\s*\}\}`)
)

// firstParty owners whose actions GitHub maintains: a tag is their release.
var firstParty = map[string]bool{"actions": true, "github": true}

// checkWorkflow runs CI001–CI002 on one GitHub Actions workflow file.
func checkWorkflow(file string, raw []byte) ([]Finding, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	var out []Finding
	add := func(id string, line int, msg string) {
		f := finding(id, file, line, msg)
		f.Kind = "Workflow"
		out = append(out, f)
	}
	jobs := get(doc.Content[0], "jobs")
	if jobs == nil {
		return nil, nil
	}
	for i := 0; i+1 < len(jobs.Content); i += 2 {
		job := jobs.Content[i].Value
		steps := get(jobs.Content[i+1], "steps")
		if steps == nil || steps.Kind != yaml.SequenceNode {
			continue
		}
		for _, st := range steps.Content {
			if u := get(st, "uses"); u != nil {
				if msg := unpinnedAction(u.Value); msg != "" {
					add("CI001", u.Line, fmt.Sprintf("job %s: %s", job, msg))
				}
			}
			if r := get(st, "run"); r != nil {
				for off, l := range strings.Split(r.Value, "\n") {
					if m := secretRefRE.FindStringSubmatch(l); m != nil && echoRE.MatchString(l) {
						add("CI002", scalarLine(r, off), fmt.Sprintf("job %s prints secrets.%s", job, m[1]))
					}
				}
			}
		}
	}
	return out, nil
}

// unpinnedAction says why a uses: reference is not pinned ("" = fine):
// local actions and docker:// images are out of scope; first-party actions
// may use a tag.
func unpinnedAction(uses string) string {
	uses = strings.TrimSpace(uses)
	if strings.HasPrefix(uses, "./") || strings.HasPrefix(uses, "docker://") {
		return ""
	}
	name, ref, ok := strings.Cut(uses, "@")
	owner, _, _ := strings.Cut(name, "/")
	switch {
	case !ok:
		return uses + " has no ref"
	case firstParty[strings.ToLower(owner)]:
		return ""
	case !shaRE.MatchString(ref):
		return fmt.Sprintf("%s is pinned to %q, which its owner can move", name, ref)
	}
	return ""
}

// scalarLine is the line of a scalar's off-th content line: a literal
// block (|) keeps its lines, starting after the indicator; a folded one
// (>) starts there too but joins lines, and any other scalar is on its
// own line.
func scalarLine(n *yaml.Node, off int) int {
	switch n.Style {
	case yaml.LiteralStyle:
		return n.Line + 1 + off
	case yaml.FoldedStyle:
		return n.Line + 1
	}
	return n.Line
}

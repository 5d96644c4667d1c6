package gitops

import (
	"fmt"
	"regexp"
	"strings"
)

// PathTemplate is a directory a workload's manifest is looked for in
// first (GITOPS_PATH_TEMPLATE; docs/MANUAL.md, "Many clusters"), with the
// placeholders {cluster} (the agent's CLUSTER_NAME), {namespace} and
// {name}: clusters/{cluster}/apps/{name} keeps one repository's clusters
// apart.
type PathTemplate string

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// ParsePathTemplates reads a comma-separated list of templates. A
// template must be a relative path without "..", using only the known
// placeholders.
func ParsePathTemplates(s string) ([]PathTemplate, error) {
	var out []PathTemplate
	for _, t := range strings.Split(s, ",") {
		t = strings.Trim(strings.TrimSpace(t), "/")
		if t == "" {
			continue
		}
		for _, p := range placeholder.FindAllString(t, -1) {
			if p != "{cluster}" && p != "{namespace}" && p != "{name}" {
				return nil, fmt.Errorf("path template %q: unknown placeholder %s (want {cluster}, {namespace}, {name})", t, p)
			}
		}
		for _, seg := range strings.Split(t, "/") {
			if seg == ".." || seg == "." || seg == "" || strings.ContainsAny(seg, "\\") {
				return nil, fmt.Errorf("path template %q: want a relative path of plain segments", t)
			}
		}
		out = append(out, PathTemplate(t))
	}
	return out, nil
}

// Dir expands t; ok is false when a placeholder it uses has no value or
// a value that is no single path segment.
func (t PathTemplate) Dir(cluster, namespace, name string) (string, bool) {
	vals := map[string]string{"{cluster}": cluster, "{namespace}": namespace, "{name}": name}
	ok := true
	dir := placeholder.ReplaceAllStringFunc(string(t), func(p string) string {
		v := vals[p]
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\") {
			ok = false
		}
		return v
	})
	for _, seg := range strings.Split(dir, "/") {
		if seg == "" || seg == "." || seg == ".." {
			ok = false
		}
	}
	return dir, ok
}

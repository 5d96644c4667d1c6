package gitops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Workload is what a memory-bump diff changes: the action envelope judges
// a merge by it (its namespace's opt-in, its budgets), and the follow-up
// check after the merge watches it (docs/MANUAL.md, "The action envelope").
type Workload struct {
	Namespace, Kind, Name, Container string
}

var limitLeafRE = regexp.MustCompile(`^doc(\d+)\.(.+)\.(containers|initContainers)\[(\d+)\]\.resources\.limits\.memory$`)

// whatRE reads the namespace a PR body claims: "in Deployment `ns/name`".
var whatRE = regexp.MustCompile("(?m)^Raise the memory limit of container `([^`]+)` in (\\w+) `([^`/]+)/([^`]+)`\\.$")

// MergeTarget names the workload a trivial memory diff changes, from the
// base manifest and the diff alone: the document's kind and name, and the
// container at the changed index. A manifest without a namespace (one a
// kustomization places) takes the namespace the PR body claims, accepted
// only when the body names the same kind, name and container and the
// finding key on its last line belongs to that workload; anything else is
// an error, and the merge is refused.
func MergeTarget(base []byte, diff, body string) (Workload, error) {
	files, err := parseUnifiedDiff(diff)
	if err != nil || len(files) != 1 {
		return Workload{}, fmt.Errorf("the diff is not one file's change")
	}
	after, err := applyDiff(base, files[0])
	if err != nil {
		return Workload{}, err
	}
	b, err := decodeValues(base)
	if err != nil {
		return Workload{}, err
	}
	a, err := decodeValues(after)
	if err != nil || len(a) != len(b) {
		return Workload{}, fmt.Errorf("the changed file does not parse as the same documents")
	}
	var diffs []string
	for i := range b {
		leafDiffs(fmt.Sprintf("doc%d", i+1), b[i], a[i], &diffs)
	}
	if len(diffs) != 1 {
		return Workload{}, fmt.Errorf("the change alters %d values, not one", len(diffs))
	}
	m := limitLeafRE.FindStringSubmatch(diffs[0])
	if m == nil {
		return Workload{}, fmt.Errorf("the value that changes is %s, not a container's memory limit", diffs[0])
	}
	di, _ := strconv.Atoi(m[1])
	ci, _ := strconv.Atoi(m[4])
	doc, _ := b[di-1].(map[string]any)
	w := Workload{Kind: CanonicalKind(str(doc["kind"]))}
	meta, _ := doc["metadata"].(map[string]any)
	w.Name, w.Namespace = str(meta["name"]), str(meta["namespace"])
	spec := any(doc)
	for _, k := range strings.Split(m[2], ".") {
		mm, _ := spec.(map[string]any)
		spec = mm[k]
	}
	ps, _ := spec.(map[string]any)
	ctrs, _ := ps[m[3]].([]any)
	if ci < len(ctrs) {
		c, _ := ctrs[ci].(map[string]any)
		w.Container = str(c["name"])
	}
	if w.Kind == "" || w.Name == "" || w.Container == "" {
		return Workload{}, fmt.Errorf("the changed document does not name its kind, name and container")
	}
	if w.Namespace != "" {
		return w, nil
	}
	return claimedNamespace(w, body)
}

func claimedNamespace(w Workload, body string) (Workload, error) {
	m := whatRE.FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		return Workload{}, fmt.Errorf("the manifest of %s %s names no namespace and the PR body does not say which", w.Kind, w.Name)
	}
	ctr, kind, ns, name := m[0][1], m[0][2], m[0][3], m[0][4]
	if ctr != w.Container || CanonicalKind(kind) != w.Kind || name != w.Name {
		return Workload{}, fmt.Errorf("the PR body names %s %s/%s container %s, the diff changes %s %s container %s", kind, ns, name, ctr, w.Kind, w.Name, w.Container)
	}
	prefix := strings.TrimSuffix(api.Finding{Namespace: ns, Kind: w.Kind, Name: w.Name, Container: w.Container}.DeriveKey(), "-") + "-"
	if key := FindingKeyOf(body); !strings.HasPrefix(key, prefix) {
		return Workload{}, fmt.Errorf("the PR body's finding key %q is not one of %s %s/%s container %s", key, w.Kind, ns, w.Name, w.Container)
	}
	w.Namespace = ns
	return w, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

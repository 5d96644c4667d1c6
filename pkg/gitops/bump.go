package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ErrRefused is wrapped by every refusal of an edit: the input is valid, but
// this change cannot be made safely by a machine.
var ErrRefused = errors.New("edit refused")

// ErrNotFound is wrapped when the workload, container, limit, file or pull
// request named does not exist.
var ErrNotFound = errors.New("not found")

// maxManifestBytes bounds the manifests BumpMemory edits.
const maxManifestBytes = 4 << 20

// podSpecPath is where each workload kind keeps its pod spec.
var podSpecPath = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// CanonicalKind returns the canonical spelling of a supported workload kind
// ("deployment" → "Deployment"), or "" when the kind has no pod template.
func CanonicalKind(kind string) string {
	for k := range podSpecPath {
		if strings.EqualFold(k, kind) {
			return k
		}
	}
	return ""
}

// BumpMemory raises resources.limits.memory of one container of one workload
// in src, a file of one or more YAML documents, and returns the new file with
// the old and new values.
//
// The workload is the document (or List item) whose kind and metadata.name
// match; the container is the entry of containers or initContainers whose
// name matches. Not finding either, or finding more than one, is an error:
// the first match is never edited. A container without a memory limit is an
// error (adding a limit is a different change), and so is a limit that is an
// alias, an anchor, reached through an alias or merge key, or written in any
// way whose source text is not exactly its value.
//
// factor 0 means DefaultFactor; otherwise it must be in (1, 2]. The result is
// old × factor rounded up to a whole Mi, written "NGi" when it is a whole
// number of Gi and "NMi" otherwise.
//
// Only the bytes of the old value change (inside the quotes when it is
// quoted), so the diff is +1/−1. Before returning, the new file is parsed
// again and must equal the old one in every document except that one value;
// otherwise the edit is refused.
func BumpMemory(src []byte, kind, workload, container string, factor float64) (out []byte, old, new string, err error) {
	if factor == 0 {
		factor = DefaultFactor
	}
	if err := checkFactor(factor); err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if kind == "" || workload == "" || container == "" {
		return nil, "", "", errors.New("kind, workload name and container are all required")
	}
	ck := CanonicalKind(kind)
	if ck == "" {
		return nil, "", "", fmt.Errorf("%w: kind %q has no pod template this tool knows (supported: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod)", ErrRefused, kind)
	}
	if err := checkSource(src); err != nil {
		return nil, "", "", err
	}
	docs, err := decodeNodes(src)
	if err != nil {
		return nil, "", "", err
	}
	tgt, err := findLimit(docs, ck, workload, container)
	if err != nil {
		return nil, "", "", err
	}
	old = tgt.value.Value
	new, err = bumpedQuantity(old, factor)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrRefused, err)
	}
	start, end, err := newLineIndex(src).scalarSpan(tgt.value)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrRefused, err)
	}
	out = make([]byte, 0, len(src)+len(new)-len(old))
	out = append(out, src[:start]...)
	out = append(out, new...)
	out = append(out, src[end:]...)
	if err := verifySplice(docs, out, tgt, new); err != nil {
		return nil, "", "", fmt.Errorf("%w: the edited file did not re-parse as the same documents with one value changed (%w); edit it by hand", ErrRefused, err)
	}
	return out, old, new, nil
}

func checkSource(src []byte) error {
	switch {
	case len(src) == 0:
		return errors.New("the manifest is empty")
	case len(src) > maxManifestBytes:
		return fmt.Errorf("%w: the manifest is %d bytes; the limit is %d", ErrRefused, len(src), maxManifestBytes)
	case !utf8.Valid(src):
		return fmt.Errorf("%w: the manifest is not valid UTF-8", ErrRefused)
	case bytes.IndexByte(src, 0) >= 0:
		return fmt.Errorf("%w: the manifest contains NUL bytes", ErrRefused)
	}
	return nil
}

// decodeNodes parses every document of src.
func decodeNodes(src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the manifest does not parse as YAML (document %d): %w", len(docs)+1, err)
		}
		docs = append(docs, &n)
	}
	if len(docs) == 0 {
		return nil, errors.New("the manifest holds no YAML document")
	}
	return docs, nil
}

// limitTarget is the memory limit found: its node and its path from the
// document root (map keys as strings, sequence indices as ints).
type limitTarget struct {
	doc   int
	path  []any
	value *yaml.Node
}

// findLimit finds the memory limit of container in the one workload of
// kind named workload: the workload among the documents (and List items),
// its pod spec, the container, then resources.limits.memory — refusing
// whatever it would have to guess at or that an edit would change
// elsewhere too (aliases, anchors).
func findLimit(docs []*yaml.Node, kind, workload, container string) (*limitTarget, error) {
	doc, path, spec, err := findWorkload(docs, kind, workload)
	if err != nil {
		return nil, err
	}
	for _, k := range podSpecPath[kind] {
		next, err := lookup(spec, k)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, fmt.Errorf("%w: %s %q has no %s", ErrNotFound, kind, workload, strings.Join(podSpecPath[kind], "."))
		}
		spec = next
		path = append(path, k)
	}
	if spec.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the pod spec of %s %q is not a mapping", ErrRefused, kind, workload)
	}
	list, idx, node, err := findContainer(spec, kind, workload, container)
	if err != nil {
		return nil, err
	}
	path = append(path, list, idx)
	missing := func(what string) error {
		return fmt.Errorf("%w: container %q of %s %q has no resources.limits.memory (%s); adding a limit is a different change from raising one", ErrNotFound, container, kind, workload, what)
	}
	for _, k := range []string{"resources", "limits", "memory"} {
		next, err := lookup(node, k)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, missing("no " + k)
		}
		node = next
		path = append(path, k)
	}
	switch {
	case node.Kind == yaml.AliasNode:
		return nil, fmt.Errorf("%w: the memory limit of container %q is a YAML alias (*%s); changing its anchor would change other values too", ErrRefused, container, node.Value)
	case node.Anchor != "":
		return nil, fmt.Errorf("%w: the memory limit of container %q carries an anchor (&%s) that other values may share", ErrRefused, container, node.Anchor)
	case node.Kind != yaml.ScalarNode:
		return nil, fmt.Errorf("%w: the memory limit of container %q is not a single value", ErrRefused, container)
	case node.Tag == "!!null" || node.Value == "":
		return nil, missing("the value is empty")
	}
	return &limitTarget{doc: doc, path: path, value: node}, nil
}

// findWorkload finds the one document (or List item) that is the workload
// of kind named workload: its document index, its path from the document
// root, and its node. None, or more than one, is an error.
func findWorkload(docs []*yaml.Node, kind, workload string) (int, []any, *yaml.Node, error) {
	type candidate struct {
		doc  int
		path []any
		node *yaml.Node
	}
	var workloads []candidate
	for i, d := range docs {
		if d.Kind != yaml.DocumentNode || len(d.Content) == 0 {
			continue
		}
		root := d.Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		if scalarAt(root, "kind") == "List" {
			items, _ := lookup(root, "items")
			if items != nil && items.Kind == yaml.SequenceNode {
				for j, it := range items.Content {
					if isWorkload(it, kind, workload) {
						workloads = append(workloads, candidate{i, []any{"items", j}, it})
					}
				}
			}
			continue
		}
		if isWorkload(root, kind, workload) {
			workloads = append(workloads, candidate{i, nil, root})
		}
	}
	switch len(workloads) {
	case 0:
		return 0, nil, nil, fmt.Errorf("%w: no %s named %q in this file", ErrNotFound, kind, workload)
	case 1:
	default:
		return 0, nil, nil, fmt.Errorf("%w: %d documents are a %s named %q (different namespaces?); refusing to guess which", ErrRefused, len(workloads), kind, workload)
	}
	w := workloads[0]
	return w.doc, append([]any{}, w.path...), w.node, nil
}

// findContainer finds the one container (or init container) of the pod
// spec named container: its list, its index there, and its node.
func findContainer(spec *yaml.Node, kind, workload, container string) (string, int, *yaml.Node, error) {
	type hit struct {
		list string
		idx  int
		node *yaml.Node
	}
	var hits []hit
	var names []string
	for _, list := range []string{"containers", "initContainers"} {
		seq, err := lookup(spec, list)
		if err != nil {
			return "", 0, nil, err
		}
		if seq == nil {
			continue
		}
		if seq.Kind != yaml.SequenceNode {
			return "", 0, nil, fmt.Errorf("%w: %s of %s %q is not a list", ErrRefused, list, kind, workload)
		}
		for j, c := range seq.Content {
			if c.Kind == yaml.AliasNode {
				return "", 0, nil, fmt.Errorf("%w: a container of %s %q is a YAML alias; edit it by hand", ErrRefused, kind, workload)
			}
			n := scalarAt(c, "name")
			names = append(names, n)
			if n == container {
				hits = append(hits, hit{list, j, c})
			}
		}
	}
	switch len(hits) {
	case 0:
		return "", 0, nil, fmt.Errorf("%w: %s %q has no container named %q (containers: %s)", ErrNotFound, kind, workload, container, strings.Join(names, ", "))
	case 1:
	default:
		return "", 0, nil, fmt.Errorf("%w: %s %q has %d containers named %q; refusing to guess", ErrRefused, kind, workload, len(hits), container)
	}
	h := hits[0]
	return h.list, h.idx, h.node, nil
}

func isWorkload(n *yaml.Node, kind, name string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	if scalarAt(n, "kind") != kind {
		return false
	}
	md, _ := lookup(n, "metadata")
	return md != nil && scalarAt(md, "name") == name
}

// scalarAt returns the scalar value under key in mapping m, or "".
func scalarAt(m *yaml.Node, key string) string {
	v, err := lookup(m, key)
	if err != nil || v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// lookup returns the value under key in mapping m, nil when absent. Paths
// that go through an alias or a merge key are refused: an edit there would
// change the anchor's other users, or the value is not where it seems.
func lookup(m *yaml.Node, key string) (*yaml.Node, error) {
	if m.Kind == yaml.AliasNode {
		return nil, fmt.Errorf("%w: the value at line %d is a YAML alias (*%s); edit it by hand", ErrRefused, m.Line, m.Value)
	}
	if m.Kind != yaml.MappingNode {
		return nil, nil
	}
	var found *yaml.Node
	merge := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
			merge = true
			continue
		}
		if k.Kind == yaml.ScalarNode && k.Value == key {
			if found != nil {
				return nil, fmt.Errorf("%w: key %q appears twice in the mapping at line %d", ErrRefused, key, m.Line)
			}
			found = m.Content[i+1]
		}
	}
	if found == nil && merge {
		return nil, fmt.Errorf("%w: the mapping at line %d takes %q from a YAML merge key (<<); edit it by hand", ErrRefused, m.Line, key)
	}
	if found != nil && found.Kind == yaml.AliasNode && key != "memory" {
		return nil, fmt.Errorf("%w: %q at line %d is a YAML alias (*%s); editing its anchor would change its other users", ErrRefused, key, found.Line, found.Value)
	}
	return found, nil
}

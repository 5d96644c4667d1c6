package gitops

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// verifySplice checks that out parses to exactly the documents of before,
// except that the value at path in document doc is now the string newValue.
// Aliases are expanded on both sides, so an edit that reached a second value
// through an anchor is caught here.
func verifySplice(before []*yaml.Node, out []byte, tgt *limitTarget, newValue string) error {
	want, err := nodesToValues(before)
	if err != nil {
		return err
	}
	if err := setPath(&want[tgt.doc], tgt.path, newValue); err != nil {
		return err
	}
	afterNodes, err := decodeNodes(out)
	if err != nil {
		return err
	}
	got, err := nodesToValues(afterNodes)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d documents before, %d after", len(want), len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			return fmt.Errorf("document %d differs beyond the memory limit", i+1)
		}
	}
	return nil
}

func nodesToValues(docs []*yaml.Node) ([]any, error) {
	out := make([]any, len(docs))
	for i, d := range docs {
		if d.Kind == yaml.DocumentNode && len(d.Content) == 0 {
			continue
		}
		if err := d.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("document %d does not decode: %w", i+1, err)
		}
	}
	return out, nil
}

// setPath sets the value at path (string keys, int indices) under *root.
func setPath(root *any, path []any, v any) error {
	if len(path) == 0 {
		*root = v
		return nil
	}
	switch c := (*root).(type) {
	case map[string]any:
		return setKey(c, func(k string) string { return k }, path, v)
	case map[any]any:
		return setKey(c, func(k string) any { return k }, path, v)
	case []any:
		i, ok := path[0].(int)
		if !ok || i < 0 || i >= len(c) {
			return fmt.Errorf("path element %v is not an index", path[0])
		}
		return setPath(&c[i], path[1:], v)
	}
	return fmt.Errorf("cannot descend into %T at %v", *root, path[0])
}

// setKey is setPath's step into a mapping, keyed by strings (as the YAML
// and JSON decoders give them) or by anything.
func setKey[K comparable](m map[K]any, key func(string) K, path []any, v any) error {
	k, ok := path[0].(string)
	if !ok {
		return fmt.Errorf("path element %v is not a key", path[0])
	}
	child, ok := m[key(k)]
	if !ok {
		return fmt.Errorf("key %q not present", k)
	}
	if err := setPath(&child, path[1:], v); err != nil {
		return err
	}
	m[key(k)] = child
	return nil
}

package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// GetYAMLArgs are the slots of k8s_get_yaml.
type GetYAMLArgs struct {
	Kind      string `json:"kind" enum:"pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,services,configmaps,nodes,namespaces,events,ingresses,persistentvolumeclaims,horizontalpodautoscalers"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

const (
	yamlValueMax = 4000 // runes per string value
	lastApplied  = "kubectl.kubernetes.io/last-applied-configuration"
)

// GetYAML returns one object as YAML without managedFields and the
// last-applied annotation (noise the model would pay for), every string
// value sanitized. A ConfigMap shows its keys, and values only under the
// keys WithConfigMapValueKeys allows, like k8s_get_resources (docs/MANUAL.md,
// "Redaction").
func (c *Client) GetYAML(ctx context.Context, a GetYAMLArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	ref, err := parseRef(a.Kind, a.Namespace, a.Name, nil)
	if err != nil {
		return "", err
	}
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return "", err
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if ann := m.GetAnnotations(); ann[lastApplied] != "" {
			delete(ann, lastApplied)
			m.SetAnnotations(ann)
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", ref, err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return "", fmt.Errorf("encoding %s: %w", ref, err)
	}
	if ref.kind == KindConfigMaps {
		c.redactConfigMap(tree)
	}
	out, err := yaml.Marshal(sanitizeTree(tree))
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", ref, err)
	}
	return string(out), nil
}

// sanitizeTree cleans every string (keys and values) of a decoded JSON tree,
// keeping line breaks in values (scripts, config files).
func sanitizeTree(v any) any {
	switch t := v.(type) {
	case string:
		return safetext.CleanBlock(t, yamlValueMax)
	case []any:
		for i := range t {
			t[i] = sanitizeTree(t[i])
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[safetext.Clean(k, 253)] = sanitizeTree(val)
		}
		return out
	}
	return v
}

// redactConfigMap replaces the values of a decoded ConfigMap's data and
// binaryData with a marker, except under the allowed keys.
func (c *Client) redactConfigMap(tree any) {
	m, ok := tree.(map[string]any)
	if !ok {
		return
	}
	for _, field := range []string{"data", "binaryData"} {
		if d, ok := m[field].(map[string]any); ok {
			redact.ConfigMapData(d, any(redact.Marker(redact.KindConfigMapValue)), func(k string) bool { return c.cmValueKeys[k] })
		}
	}
}

// Package helmchart renders and lints the kubecrew Helm chart
// (manifests/helm/kubecrew) with the Helm Go library, the same code path as
// `helm template` and `helm lint`, so the tests and hack/manifests-check.sh
// need no helm binary.
package helmchart

import (
	"context"
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version the chart is rendered and linted
// for: the test API server's (hack/testenv.sh).
const KubeVersion = "v1.37.2"

// Release is one rendered install.
type Release struct {
	// Manifest is every object, as `helm template` prints them (a
	// multi-document YAML stream in Helm's install order).
	Manifest string
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders the chart in dir as release name into namespace with
// values (nil = the chart's defaults). Values are validated against
// values.schema.json first, as `helm install` does.
func Render(ctx context.Context, dir, name, namespace string, values map[string]any) (Release, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return Release{}, fmt.Errorf("load chart %s: %w", dir, err)
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return Release{}, fmt.Errorf("kube version %s: %w", KubeVersion, err)
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = name
	inst.Namespace = namespace
	inst.KubeVersion = kv
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.RunWithContext(ctx, chrt, values)
	if err != nil {
		return Release{}, fmt.Errorf("render chart %s: %w", dir, err)
	}
	return Release{Manifest: rel.Manifest, Notes: rel.Info.Notes}, nil
}

// ReadValues reads a values file (YAML); it names the file in errors.
func ReadValues(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Lint runs Helm's linters (Chart.yaml, values and schema, every template
// rendered and parsed) and returns the messages at warning level and above,
// each as "[SEVERITY] path: message".
func Lint(dir, namespace string, values map[string]any) ([]string, error) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %s: %w", KubeVersion, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	l := lint.AllWithKubeVersion(dir, values, namespace, kv)
	var out []string
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, strings.TrimSpace(m.Error()))
		}
	}
	return out, nil
}

// Merge overlays b on a as `helm -f a -f b` does: maps merge key by key,
// anything else in b replaces a's.
func Merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = Merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

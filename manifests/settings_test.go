package manifests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/manifests/helmchart"
)

// setting is one row of a binary's settings table.
type setting struct {
	name   string
	secret bool
}

var (
	agentSpecRow  = regexp.MustCompile(`(?m)^\s*\{"([A-Z][A-Z0-9_]+)", "[^"]*", (k[A-Za-z]+),`)
	coreSpecRow   = regexp.MustCompile(`\{Name: "([A-Z][A-Z0-9_]+)"`)
	coreSecretMap = regexp.MustCompile(`(?s)var secrets = map\[string\]bool\{(.*?)\}`)
	quotedName    = regexp.MustCompile(`"([A-Z][A-Z0-9_]+)"`)
)

// settingsTables reads both binaries' settings tables from their source
// (what --help prints and docs/MANUAL.md documents): the agent's specs with
// their kind, the core's Specs with its secrets.
func settingsTables(t *testing.T) map[string][]setting {
	t.Helper()
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	out := map[string][]setting{}
	for _, m := range agentSpecRow.FindAllStringSubmatch(read("services/agent/internal/config/config.go"), -1) {
		out["agent"] = append(out["agent"], setting{m[1], m[2] == "kSecret"})
	}
	src := read("services/core/internal/config/settings.go")
	secrets := map[string]bool{}
	if m := coreSecretMap.FindStringSubmatch(src); m != nil {
		for _, q := range quotedName.FindAllStringSubmatch(m[1], -1) {
			secrets[q[1]] = true
		}
	}
	for _, m := range coreSpecRow.FindAllStringSubmatch(src, -1) {
		out["core"] = append(out["core"], setting{m[1], secrets[m[1]]})
	}
	if len(out["agent"]) < 50 || len(out["core"]) < 20 || len(secrets) < 5 {
		t.Fatalf("the settings tables were not read: %d agent, %d core settings, %d core secrets", len(out["agent"]), len(out["core"]), len(secrets))
	}
	return out
}

// noWayIn are settings the shipped manifests deliberately cannot set, with
// the reason (docs/MANUAL.md, "Install"). Empty: every setting has a way in.
var noWayIn = map[string]string{}

// wayIn says how a render lets an operator set name on the binary's
// containers: a Secret reference for a secret, the binary's ConfigMap
// (envFrom: config/<binary>.env, one more line) or an env entry otherwise.
func wayIn(r *Render, component string, s setting) string {
	for _, ot := range r.PodTemplates() {
		if ot.Template.Metadata.Labels[Component] != component {
			continue
		}
		for _, c := range ot.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name != s.name {
					continue
				}
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return "Secret " + e.ValueFrom.SecretKeyRef.Name
				}
				if !s.secret {
					return "env"
				}
			}
			if s.secret {
				continue // a secret in a ConfigMap would be readable by anyone who reads ConfigMaps
			}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					return "ConfigMap " + ef.ConfigMapRef.Name
				}
			}
		}
	}
	return ""
}

// TestEverySettingHasAWayIn: every setting of both binaries' tables can be
// set through the kustomize base or the chart (every value set) — a secret
// through a Secret reference — or is on noWayIn with its reason (issue 31,
// case 7: the core's chat webhooks were in neither).
func TestEverySettingHasAWayIn(t *testing.T) {
	t.Parallel()
	base := render(t, target{name: "base", dir: "base"})
	full, _ := helmRender(t, helmCases[1])
	var missing []string
	for component, table := range settingsTables(t) {
		for _, s := range table {
			if _, ok := noWayIn[s.name]; ok {
				continue
			}
			if wayIn(base, component, s) == "" && wayIn(full, component, s) == "" {
				kind := "setting"
				if s.secret {
					kind = "secret (wants a Secret reference)"
				}
				missing = append(missing, component+" "+s.name+": "+kind)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("settings neither the kustomize base nor the chart can set:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestHelmRequiresToken: without auth.token.secretName the chart refuses
// to render, naming the value (issue 31, case 1: a default install had no
// authentication); with it, every core and agent container reads
// AUTH_TOKEN from that Secret, not optional.
func TestHelmRequiresToken(t *testing.T) {
	t.Parallel()
	for _, values := range []map[string]any{nil, {"auth": map[string]any{"token": map[string]any{"secretName": ""}}}} {
		_, err := helmchart.Render(context.Background(), chartDir, "kubecrew", "kubecrew", values)
		if err == nil || !strings.Contains(err.Error(), "auth.token.secretName is required") {
			t.Errorf("values %v: err = %v, want one naming auth.token.secretName", values, err)
		}
	}
	r, _ := helmRender(t, helmCases[0])
	n := 0
	for _, ot := range r.PodTemplates() {
		comp := ot.Template.Metadata.Labels[Component]
		if comp != "core" && comp != "agent" {
			continue
		}
		for _, c := range ot.Template.Spec.Containers {
			n++
			e := envByName(&c, "AUTH_TOKEN")
			if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != SecretName ||
				(e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional) {
				t.Errorf("%s: AUTH_TOKEN %+v, want a required reference to Secret %s", ot.Owner.Ref(), e, SecretName)
			}
		}
	}
	if n != 6 {
		t.Errorf("%d core and agent containers, want 6", n)
	}
}

package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the repository, one level up from manifests/.
const repoRoot = ".."

// kubectl finds a kubectl with kustomize: $KUBECTL, the testenv build, PATH.
func kubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if home, err := os.UserHomeDir(); err == nil {
		k := filepath.Join(home, ".cache", "k8s-testenv", "v1.37.2", "bin", "kubectl")
		if _, err := os.Stat(k); err == nil {
			return k
		}
	}
	if k, err := exec.LookPath("kubectl"); err == nil {
		return k
	}
	msg := "no kubectl (set KUBECTL, or run WITH_KUBECTL=1 hack/testenv.sh install)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// target is one thing to render: an overlay, or the base with a component.
type target struct {
	name string
	want Expectations
	// dir is rendered directly; component is rendered on top of the base.
	dir, component string
}

// expectations per overlay. A new overlay without an entry here fails
// TestEveryOverlayHasExpectations: decide what it must satisfy.
var expectations = map[string]Expectations{
	"base":                     {CoreReplicas: 2},
	"overlays/dev":             {CoreReplicas: 1, ImageTag: "dev", LogLevel: "debug"},
	"overlays/prod":            {CoreReplicas: 2, DatabaseRequired: true, PDB: true, LogLevel: "info"},
	"components/pulse-cronjob": {CoreReplicas: 2, PulseCronJob: true},
	"components/monitoring":    {CoreReplicas: 2, ServiceMonitors: true, ScrapeFrom: true},
}

func targets(t *testing.T) []target {
	t.Helper()
	out := []target{{name: "base", dir: "base"}}
	for _, kind := range []string{"overlays", "components"} {
		entries, err := os.ReadDir(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			tg := target{name: kind + "/" + e.Name()}
			if kind == "overlays" {
				tg.dir = tg.name
			} else {
				tg.component = tg.name
			}
			out = append(out, tg)
		}
	}
	for i := range out {
		out[i].want = expectations[out[i].name]
	}
	return out
}

var renderCache sync.Map // target name → []byte

// render runs kubectl kustomize (a component is rendered on the base).
func render(t *testing.T, tg target) *Render {
	t.Helper()
	if b, ok := renderCache.Load(tg.name); ok {
		r, err := Parse(tg.name, b.([]byte))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := kubectl(t)
	dir := tg.dir
	if tg.component != "" {
		// kustomize wants relative paths; a throwaway kustomization next to
		// nothing of ours combines the base and the component.
		tmp := t.TempDir()
		abs, err := filepath.Abs(".")
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(tmp, abs)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s/base]\ncomponents: [%s/%s]\n",
			filepath.ToSlash(rel), filepath.ToSlash(rel), tg.component)
		if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
		dir = tmp
	}
	var stderr bytes.Buffer
	cmd := exec.Command(k, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", tg.name, err, stderr.String())
	}
	renderCache.Store(tg.name, out)
	r, err := Parse(tg.name, out)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var upperLiteral = regexp.MustCompile(`"([A-Z][A-Z0-9_]{2,})"`)

// loadContract reads the env names each binary reads, the persona keys and
// the image's binaries from the repository.
func loadContract(t *testing.T) Contract {
	t.Helper()
	c := Contract{PersonaKeys: map[string]bool{}}
	names := func(file string) map[string]bool {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Logf("env names of %s not checked: %v", file, err)
			return nil
		}
		m := map[string]bool{}
		for _, s := range upperLiteral.FindAllStringSubmatch(string(b), -1) {
			m[s[1]] = true
		}
		return m
	}
	c.AgentEnv = names("services/agent/internal/config/config.go")
	c.CoreEnv = names("services/core/internal/config/config.go")
	envs, err := filepath.Glob(filepath.Join(repoRoot, "agents", "*", "agent.env"))
	if err != nil || len(envs) == 0 {
		t.Fatalf("no agents/*/agent.env (%v)", err)
	}
	for _, f := range envs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				c.PersonaKeys[strings.TrimSpace(k)] = true
			}
		}
	}
	_, bins, err := CheckDockerfile(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	c.Binaries = bins
	return c
}

func TestEveryOverlayHasExpectations(t *testing.T) {
	t.Parallel()
	for _, tg := range targets(t) {
		if _, ok := expectations[tg.name]; !ok {
			t.Errorf("%s has no entry in expectations (manifests_test.go): say what it must satisfy", tg.name)
		}
	}
}

// TestRenders renders every overlay (and each component on the base) and
// runs every check.
func TestRenders(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	for _, tg := range targets(t) {
		t.Run(strings.ReplaceAll(tg.name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			r := render(t, tg)
			for _, p := range Check(r, tg.want, c) {
				t.Error(p)
			}
		})
	}
}

// TestRenderContents pins facts a reader of the brief expects, beyond the
// generic rules.
func TestRenderContents(t *testing.T) {
	t.Parallel()
	base := render(t, target{name: "base", dir: "base"})
	prod := render(t, target{name: "overlays/prod", dir: "overlays/prod"})

	kinds := map[string]int{}
	for _, h := range base.All {
		kinds[h.Kind]++
	}
	for kind, n := range map[string]int{
		"Namespace": 1, "Deployment": 6, "Service": 6, "ServiceAccount": 6, "NetworkPolicy": 2,
		"ClusterRole": 2, "ClusterRoleBinding": 2, "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1,
		"ConfigMap": 3, "Secret": 0, "Role": 1, "RoleBinding": 1,
	} {
		if kinds[kind] != n {
			t.Errorf("base: %d %s, want %d", kinds[kind], kind, n)
		}
	}
	// Sol's write is bound to Sol alone; the reader to the five agents.
	bound := map[string][]string{}
	for _, b := range base.Bindings {
		for _, s := range b.Subjects {
			bound[b.RoleRef.Name] = append(bound[b.RoleRef.Name], s.Name)
		}
	}
	sort.Strings(bound["kubecrew-cluster-reader"])
	if got := strings.Join(bound["kubecrew-rollout-restart"], ","); got != "agent-k8s-engineer" {
		t.Errorf("kubecrew-rollout-restart bound to %q, want agent-k8s-engineer", got)
	}
	if got, want := strings.Join(bound["kubecrew-cluster-reader"], ","),
		"agent-backend-architect,agent-cicd-engineer,agent-code-reviewer,agent-k8s-engineer,agent-platform-sre"; got != want {
		t.Errorf("kubecrew-cluster-reader bound to %q, want %q", got, want)
	}
	// The reader covers what the cluster tools read.
	granted := map[string]bool{}
	for _, r := range base.Roles {
		if r.Metadata.Name != "kubecrew-cluster-reader" {
			continue
		}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					granted[g+"/"+res] = true
				}
			}
		}
	}
	for _, res := range []string{"/pods", "/pods/log", "/events", "/nodes", "/namespaces", "/services", "/configmaps",
		"/persistentvolumeclaims", "apps/deployments", "apps/replicasets", "apps/statefulsets", "apps/daemonsets",
		"batch/jobs", "batch/cronjobs", "networking.k8s.io/ingresses", "autoscaling/horizontalpodautoscalers",
		"events.k8s.io/events", "policy/poddisruptionbudgets", "storage.k8s.io/storageclasses",
		"admissionregistration.k8s.io/validatingwebhookconfigurations", "admissionregistration.k8s.io/mutatingwebhookconfigurations"} {
		if !granted[res] {
			t.Errorf("kubecrew-cluster-reader does not grant %s", res)
		}
	}
	// Prod gives Noor more memory than the base.
	noorLimit := func(r *Render) string {
		return r.Deployment("agent-platform-sre").Spec.Template.Spec.Containers[0].Resources.Limits["memory"]
	}
	if b, p := noorLimit(base), noorLimit(prod); b == p {
		t.Errorf("prod Noor memory limit %s equals the base's", p)
	}
	// Prod images are pinned, not latest.
	for _, d := range prod.Deployments {
		img := d.Spec.Template.Spec.Containers[0].Image
		if strings.HasSuffix(img, ":latest") || !strings.Contains(img, ":") {
			t.Errorf("prod %s: image %s is not pinned", d.Metadata.Name, img)
		}
	}
}

// mutation breaks one rule in a freshly parsed base render.
type mutation struct {
	name   string
	target string // render to mutate (default base)
	mutate func(r *Render)
	want   string // substring of the expected problem
}

func agentCtr(r *Render, slug string) *Container {
	return &r.Deployment("agent-" + slug).Spec.Template.Spec.Containers[0]
}

func coreCtr(r *Render) *Container {
	return &r.Deployment("kubecrew-core").Spec.Template.Spec.Containers[0]
}

func envByName(c *Container, name string) *EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func boolp(b bool) *bool { return &b }

// TestChecksCatch proves each rule fails when broken: a check that cannot
// fail is not a check.
func TestChecksCatch(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	cases := []mutation{
		{"startupProbe removed", "", func(r *Render) { agentCtr(r, "platform-sre").StartupProbe = nil }, "no startupProbe"},
		{"startup budget too short", "", func(r *Render) { coreCtr(r).StartupProbe.FailureThreshold = 5 }, "allows only 10s to boot"},
		{"liveness delay instead of startupProbe", "", func(r *Render) { agentCtr(r, "k8s-engineer").LivenessProbe.InitialDelaySeconds = 45 }, "startupProbe is the boot budget"},
		{"readiness on /health", "", func(r *Render) { coreCtr(r).ReadinessProbe.HTTPGet.Path = "/health" }, "readinessProbe must be httpGet /ready"},
		{"replicas not told to the core", "", func(r *Render) { n := 3; r.Deployment("kubecrew-core").Spec.Replicas = &n }, "CORE_REPLICAS \"2\", but the Deployment runs 3 replicas"},
		{"probe on a missing port", "", func(r *Render) { coreCtr(r).LivenessProbe.HTTPGet.Port = "metrics" }, "is not a container port"},
		{"cpu limit 100m", "", func(r *Render) { coreCtr(r).Resources.Limits["cpu"] = "100m" }, "throttles boot"},
		{"no memory limit", "", func(r *Render) { delete(agentCtr(r, "code-reviewer").Resources.Limits, "memory") }, "no memory limit"},
		{"pod without part-of", "", func(r *Render) {
			delete(r.Deployment("agent-code-reviewer").Spec.Template.Metadata.Labels, PartOf)
		}, "pod template label app.kubernetes.io/part-of=kubecrew missing"},
		{"object without part-of", "", func(r *Render) { delete(r.All[0].Metadata.Labels, PartOf) }, "label app.kubernetes.io/part-of=kubecrew missing"},
		{"writable root filesystem", "", func(r *Render) {
			agentCtr(r, "cicd-engineer").SecurityContext.ReadOnlyRootFilesystem = boolp(false)
		}, "readOnlyRootFilesystem must be true"},
		{"capabilities kept", "", func(r *Render) { coreCtr(r).SecurityContext.Capabilities.Drop = nil }, "must drop ALL"},
		{"runs as root", "", func(r *Render) { r.Deployment("kubecrew-core").Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil }, "runAsNonRoot must be true"},
		{"reader reads secrets", "", func(r *Render) {
			r.Roles[0].Rules[0].Resources = append(r.Roles[0].Rules[0].Resources, "secrets")
		}, "mentions secrets"},
		{"reader writes pods", "", func(r *Render) {
			r.Roles[0].Rules[0].Verbs = append(r.Roles[0].Rules[0].Verbs, "delete")
		}, "the only writes allowed are patch on apps/deployments and create on pods/eviction"},
		{"eviction widened to pod deletes", "", func(r *Render) {
			for i := range r.Roles {
				for j := range r.Roles[i].Rules {
					if slices.Contains(r.Roles[i].Rules[j].Resources, "pods/eviction") {
						r.Roles[i].Rules[j].Resources = []string{"pods/eviction", "pods"}
						r.Roles[i].Rules[j].Verbs = []string{"create", "delete"}
					}
				}
			}
		}, "grants [create delete] on []/[pods/eviction pods]"},
		{"wildcard verb", "", func(r *Render) { r.Roles[0].Rules[0].Verbs = []string{"*"} }, "verb wildcard"},
		{"Noor may patch", "", func(r *Render) {
			for i := range r.Bindings {
				if r.Bindings[i].RoleRef.Name == "kubecrew-rollout-restart" {
					r.Bindings[i].Subjects[0].Name = "agent-platform-sre"
				}
			}
		}, "only agent-k8s-engineer may restart"},
		{"core bound", "", func(r *Render) {
			r.Bindings[0].Subjects[0].Name = "kubecrew-core"
		}, "binds the core"},
		{"core rollout takes a replica away", "", func(r *Render) {
			r.Deployment("kubecrew-core").Spec.Strategy.RollingUpdate.MaxUnavailable = 1
		}, "strategy must be RollingUpdate with maxUnavailable: 0"},
		{"core recreated on upgrade", "", func(r *Render) {
			s := &r.Deployment("kubecrew-core").Spec.Strategy
			s.Type, s.RollingUpdate = "Recreate", nil
		}, "strategy must be RollingUpdate with maxUnavailable: 0"},
		{"a migration hook", "", func(r *Render) {
			r.All = append(r.All, Header{Kind: "Job", Metadata: Meta{Name: "migrate", Namespace: "kubecrew",
				Labels: map[string]string{PartOf: PartOfValue}, Annotations: map[string]string{"helm.sh/hook": "pre-upgrade"}}})
		}, "Job/kubecrew/migrate: an upgrade is the new pods alone"},
		{"core token mounted", "", func(r *Render) {
			r.Deployment("kubecrew-core").Spec.Template.Spec.AutomountServiceAccountToken = nil
		}, "automountServiceAccountToken must be false"},
		{"persona setting shadowed", "", func(r *Render) {
			for i := range r.ConfigMaps {
				if strings.HasPrefix(r.ConfigMaps[i].Metadata.Name, "kubecrew-agent") {
					r.ConfigMaps[i].Data["AGENT_TOOLS"] = "k8s_rollout"
				}
			}
		}, "silently overrides agents/"},
		{"secret not optional", "", func(r *Render) {
			envByName(agentCtr(r, "platform-sre"), "LLM_API_KEY").ValueFrom.SecretKeyRef.Optional = boolp(false)
		}, "LLM_API_KEY must be optional: true"},
		{"prod database optional", "overlays/prod", func(r *Render) {
			envByName(coreCtr(r), "DATABASE_URL").ValueFrom.SecretKeyRef.Optional = boolp(true)
		}, "DATABASE_URL must be required here"},
		{"Vera uses Sol's forge identity", "", func(r *Render) {
			envByName(agentCtr(r, "code-reviewer"), "GITHUB_TOKEN").ValueFrom.SecretKeyRef.Name = ForgeSecretName("k8s-engineer")
		}, "GITHUB_TOKEN comes from Secret kubecrew-forge-k8s-engineer, want kubecrew-forge-code-reviewer"},
		{"forge token from the shared Secret", "", func(r *Render) {
			envByName(agentCtr(r, "k8s-engineer"), "GITHUB_TOKEN").ValueFrom.SecretKeyRef.Name = SecretName
		}, "GITHUB_TOKEN comes from Secret kubecrew-secrets, want kubecrew-forge-k8s-engineer"},
		{"secret as literal", "", func(r *Render) {
			e := envByName(coreCtr(r), "AUTH_TOKEN")
			e.ValueFrom, e.Value = nil, "hunter2"
		}, "AUTH_TOKEN must come from Secret"},
		{"whole secret as envFrom", "", func(r *Render) {
			ctr := agentCtr(r, "backend-architect")
			ctr.EnvFrom = append(ctr.EnvFrom, EnvFrom{SecretRef: &struct {
				Name string `yaml:"name"`
			}{Name: SecretName}})
		}, "envFrom secretRef"},
		{"namespace hard-coded", "", func(r *Render) {
			e := envByName(agentCtr(r, "platform-sre"), "AGENT_NAMESPACE")
			e.ValueFrom, e.Value = nil, "kubecrew"
		}, "AGENT_NAMESPACE must come from the downward API"},
		{"wrong persona", "", func(r *Render) { envByName(agentCtr(r, "code-reviewer"), "AGENT_PERSONA").Value = "sol" }, "AGENT_PERSONA \"sol\", want code-reviewer"},
		{"Dax on by default", "", func(r *Render) { n := 1; r.Deployment("agent-cicd-engineer").Spec.Replicas = &n }, "replicas 1, want 0"},
		{"agent command typo", "", func(r *Render) { agentCtr(r, "platform-sre").Command = []string{"/usr/local/bin/agentd"} }, "not a binary the Dockerfile installs"},
		{"service misses the pod port", "", func(r *Render) {
			for i := range r.Services {
				if r.Services[i].Metadata.Name == "agent-k8s-engineer" {
					r.Services[i].Spec.Ports[0].TargetPort = 9000
				}
			}
		}, "targetPort 9000 is not a container port"},
		{"peer template off", "", func(r *Render) {
			for i := range r.ConfigMaps {
				if strings.HasPrefix(r.ConfigMaps[i].Metadata.Name, "kubecrew-agent") {
					r.ConfigMaps[i].Data["PEER_URL_TEMPLATE"] = "http://{slug}.{namespace}.svc:8000"
				}
			}
		}, "PEER_URL_TEMPLATE gives http://platform-sre.kubecrew.svc:8000"},
		{"agents open to all", "", func(r *Render) {
			for i := range r.NetworkPolicies {
				if r.NetworkPolicies[i].Metadata.Name == "kubecrew-agents" {
					r.NetworkPolicies[i].Spec.Ingress[0].From = nil
				}
			}
		}, "admits every source"},
		{"core open to the cluster (issue 31, case 1)", "", func(r *Render) {
			for i := range r.NetworkPolicies {
				if r.NetworkPolicies[i].Metadata.Name == "kubecrew-core" {
					r.NetworkPolicies[i].Spec.Ingress[1].From = nil
				}
			}
		}, "the core takes traffic from the fleet and the namespaces the operator names only"},
		{"token optional (issue 31, case 1)", "", func(r *Render) {
			envByName(coreCtr(r), "AUTH_TOKEN").ValueFrom.SecretKeyRef.Optional = boolp(true)
		}, "AUTH_TOKEN must be required here"},
		{"no agent policy", "", func(r *Render) {
			for i := range r.NetworkPolicies {
				if r.NetworkPolicies[i].Metadata.Name == "kubecrew-agents" {
					r.NetworkPolicies[i].Spec.PodSelector.MatchLabels[Component] = "nobody"
				}
			}
		}, "no NetworkPolicy restricts ingress"},
		{"call timeout above cooldown", "", func(r *Render) {
			for i := range r.ConfigMaps {
				if strings.HasPrefix(r.ConfigMaps[i].Metadata.Name, "kubecrew-core-") && r.ConfigMaps[i].Data["ALERT_COOLDOWN"] != "" {
					r.ConfigMaps[i].Data["AGENT_CALL_TIMEOUT"] = "40m"
				}
			}
		}, "must be below ALERT_COOLDOWN"},
		{"call timeout under the model ceiling", "", func(r *Render) {
			for i := range r.ConfigMaps {
				if strings.HasPrefix(r.ConfigMaps[i].Metadata.Name, "kubecrew-core-") && r.ConfigMaps[i].Data["ALERT_COOLDOWN"] != "" {
					r.ConfigMaps[i].Data["AGENT_CALL_TIMEOUT"] = "120s"
				}
			}
		}, "must exceed the agents' LLM_TIMEOUT"},
		{"routes file not mounted", "", func(r *Render) { coreCtr(r).VolumeMounts = coreCtr(r).VolumeMounts[1:] }, "ROUTES_FILE /etc/kubecrew/routes.yaml is not a key of a mounted ConfigMap"},
		{"dev image tag", "overlays/dev", func(r *Render) { coreCtr(r).Image = "ghcr.io/kubecrew/kubecrew:latest" }, "want tag dev"},
		{"pulse timer left on", "components/pulse-cronjob", func(r *Render) {
			envByName(agentCtr(r, "platform-sre"), "PULSE_ENABLED").Value = "true"
		}, "one clock, not two"},
		{"scraper admitted on every port", "components/monitoring", func(r *Render) {
			in := &agentPolicy(r).Spec.Ingress[1]
			in.Ports = append(in.Ports, in.Ports[0])
			in.Ports[1].Port = 9090
		}, "ingress 2: admits sources outside"},
		{"scraper from every namespace", "components/monitoring", func(r *Render) {
			in := &agentPolicy(r).Spec.Ingress[1]
			in.From[0].PodSelector, in.From[0].NamespaceSelector = nil, &LabelSelector{}
		}, "ingress 2: admits sources outside"},
		{"scraper rule gone", "components/monitoring", func(r *Render) {
			agentPolicy(r).Spec.Ingress = agentPolicy(r).Spec.Ingress[:1]
		}, "0 ingress rules admit a scraper"},
		{"ServiceMonitor without honorLabels", "components/monitoring", func(r *Render) {
			r.ServiceMonitors[0].Spec.Endpoints[0].HonorLabels = false
		}, "want /metrics and true"},
		{"ServiceMonitor on a port the Service lacks", "components/monitoring", func(r *Render) {
			r.ServiceMonitors[1].Spec.Endpoints[0].Port = "metrics"
		}, `has no port named "metrics"`},
		{"agents not scraped", "components/monitoring", func(r *Render) {
			for i := range r.ServiceMonitors {
				r.ServiceMonitors[i].Spec.Selector.MatchLabels[Component] = "core"
			}
		}, "Service/kubecrew/agent-platform-sre: no ServiceMonitor scrapes it"},
	}
	if c.AgentEnv != nil {
		cases = append(cases, mutation{"misspelt variable", "", func(r *Render) {
			ctr := agentCtr(r, "platform-sre")
			ctr.Env = append(ctr.Env, EnvVar{Name: "LLM_API_TOKEN", Value: "x"})
		}, "LLM_API_TOKEN (from env) is not a variable the binary reads"})
	}
	all := map[string]target{}
	for _, tg := range targets(t) {
		all[tg.name] = tg
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.target
			if name == "" {
				name = "base"
			}
			tg, ok := all[name]
			if !ok {
				t.Fatalf("no render %s", name)
			}
			r := render(t, tg) // a fresh parse: mutations do not leak
			if before := Check(r, tg.want, c); len(before) > 0 {
				t.Skipf("%s is not clean before the mutation (TestRenders says why)", name)
			}
			tc.mutate(r)
			got := Check(r, tg.want, c)
			for _, p := range got {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Errorf("after %q, want a problem containing %q; got %q", tc.name, tc.want, got)
		})
	}
}

// agentPolicy is the agents' NetworkPolicy of a render.
func agentPolicy(r *Render) *NetworkPolicy {
	for i := range r.NetworkPolicies {
		if r.NetworkPolicies[i].Metadata.Name == "kubecrew-agents" {
			return &r.NetworkPolicies[i]
		}
	}
	return &NetworkPolicy{}
}

package manifests

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Labels every kubecrew object carries. Sol refuses to act on workloads
// labelled PartOf=PartOfValue (the loop restarted its own detector).
const (
	PartOf      = "app.kubernetes.io/part-of"
	PartOfValue = "kubecrew"
	NameLabel   = "app.kubernetes.io/name"
	Component   = "app.kubernetes.io/component"
)

// SecretName is the one Secret the fleet reads, by reference only.
const SecretName = "kubecrew-secrets"

// Agent is one persona's workload.
type Agent struct {
	Persona, Slug string
	// Replicas by default: Dax and Ada advise on demand and start at 0.
	Replicas int
}

// Fleet is the five personas (docs/ARCHITECTURE.md).
var Fleet = []Agent{
	{"noor", "platform-sre", 1},
	{"sol", "k8s-engineer", 1},
	{"vera", "code-reviewer", 1},
	{"dax", "cicd-engineer", 0},
	{"ada", "backend-architect", 0},
}

// ActorSlug is the only agent allowed a cluster write.
const ActorSlug = "k8s-engineer"

// Expectations are what a render must satisfy beyond the common rules.
type Expectations struct {
	CoreReplicas int
	// ImageTag every container image of ours must carry ("" = any but latest
	// is allowed).
	ImageTag string
	// DatabaseRequired: DATABASE_URL references are not optional.
	DatabaseRequired bool
	// LogLevel expected in both ConfigMaps ("" = not checked).
	LogLevel string
	// PDB: a PodDisruptionBudget must cover the core.
	PDB bool
	// PulseCronJob: the pulse component is included.
	PulseCronJob bool
}

// Contract is what the manifests are checked against that lives outside
// them: the env names each binary reads and the keys the persona files set.
type Contract struct {
	// AgentEnv and CoreEnv: every variable the binary reads (nil = unchecked).
	AgentEnv, CoreEnv map[string]bool
	// PersonaKeys: keys set by any agents/*/agent.env; the shared ConfigMap
	// must not set them (the manifest silently wins).
	PersonaKeys map[string]bool
	// Binaries the image provides (absolute paths).
	Binaries map[string]bool
}

// Check runs every rule on r and returns one message per violation.
func Check(r *Render, want Expectations, c Contract) []string {
	var p problems
	checkLabels(r, &p)
	checkPods(r, c, &p)
	checkRBAC(r, &p)
	checkCore(r, want, c, &p)
	checkAgents(r, want, c, &p)
	checkNetwork(r, &p)
	checkOverlay(r, want, &p)
	return p
}

type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// checkLabels: every object is part of kubecrew (cluster-scoped ones too, so
// `kubectl get -l app.kubernetes.io/part-of=kubecrew` finds what we own), and
// every pod template carries part-of, name and component.
func checkLabels(r *Render, p *problems) {
	for _, h := range r.All {
		if h.Metadata.Labels[PartOf] != PartOfValue {
			p.addf("%s: label %s=%s missing", h.Ref(), PartOf, PartOfValue)
		}
		if h.Kind != "Namespace" && !clusterScoped(h.Kind) && h.Metadata.Namespace == "" {
			p.addf("%s: no namespace", h.Ref())
		}
	}
	for _, ot := range r.PodTemplates() {
		l := ot.Template.Metadata.Labels
		if l[PartOf] != PartOfValue {
			p.addf("%s: pod template label %s=%s missing (Sol's guard keys on it)", ot.Owner.Ref(), PartOf, PartOfValue)
		}
		for _, k := range []string{NameLabel, Component} {
			if l[k] == "" {
				p.addf("%s: pod template label %s missing", ot.Owner.Ref(), k)
			}
		}
	}
	for _, d := range r.Deployments {
		if d.Metadata.Labels[PartOf] != PartOfValue {
			continue // reported above
		}
		sel := d.Spec.Selector
		if len(sel.MatchExpressions) > 0 || len(sel.MatchLabels) == 0 {
			p.addf("%s: selector must be matchLabels only", d.Ref())
		}
		for k, v := range sel.MatchLabels {
			if d.Spec.Template.Metadata.Labels[k] != v {
				p.addf("%s: selector %s=%s does not match the pod template", d.Ref(), k, v)
			}
		}
	}
}

func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "PriorityClass":
		return true
	}
	return false
}

// checkPods: probes, resources, security context, Secret references.
func checkPods(r *Render, c Contract, p *problems) {
	for _, ot := range r.PodTemplates() {
		ref, spec := ot.Owner.Ref(), &ot.Template.Spec
		if spec.HostNetwork || spec.HostPID {
			p.addf("%s: hostNetwork/hostPID", ref)
		}
		sc := spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			p.addf("%s: pod securityContext.runAsNonRoot must be true", ref)
		}
		if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
			p.addf("%s: pod seccompProfile must be RuntimeDefault", ref)
		}
		if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			p.addf("%s: runAsUser 0", ref)
		}
		if len(spec.InitContainers) > 0 {
			p.addf("%s: init containers are not expected (nothing to wait for: boot is ~100 ms)", ref)
		}
		for _, ctr := range spec.Containers {
			cref := ref + " container " + ctr.Name
			checkContainerSecurity(cref, ctr, p)
			checkResources(cref, ctr, ot.Owner.Kind == "Deployment", p)
			checkSecretRefs(cref, ctr, p)
			if ot.Owner.Kind == "Deployment" {
				checkProbes(cref, ctr, p)
				if len(ctr.Command) == 0 {
					p.addf("%s: no command: the image holds two binaries, each Deployment names its own", cref)
				} else if c.Binaries != nil && !c.Binaries[ctr.Command[0]] {
					p.addf("%s: command %s is not a binary the Dockerfile installs (%s)", cref, ctr.Command[0], keys(c.Binaries))
				}
			}
		}
		for _, v := range spec.Volumes {
			if v.Secret != nil {
				p.addf("%s: volume %s mounts a Secret; the fleet takes Secrets only as optional env references", ref, v.Name)
			}
		}
	}
}

func checkContainerSecurity(ref string, ctr Container, p *problems) {
	s := ctr.SecurityContext
	if s == nil {
		p.addf("%s: no securityContext", ref)
		return
	}
	if s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem {
		p.addf("%s: readOnlyRootFilesystem must be true", ref)
	}
	if s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation {
		p.addf("%s: allowPrivilegeEscalation must be false", ref)
	}
	if s.Privileged != nil && *s.Privileged {
		p.addf("%s: privileged", ref)
	}
	if s.Capabilities == nil || !slices.Contains(s.Capabilities.Drop, "ALL") {
		p.addf("%s: capabilities must drop ALL", ref)
	}
	if s.Capabilities != nil && len(s.Capabilities.Add) > 0 {
		p.addf("%s: adds capabilities %v", ref, s.Capabilities.Add)
	}
}

// minCPULimitMilli is the smallest CPU limit accepted when one is set. Seed
// §17: limits.cpu 100m turned a 4.4 CPU-second boot into 44 s and liveness
// killed the pod 65 times. The manifests set none; a limit below this is an
// error rather than a style choice.
const minCPULimitMilli = 500

// checkResources: requests and a memory limit everywhere; for the fleet's
// own long-running binaries (ours = true) a memory floor as well.
func checkResources(ref string, ctr Container, ours bool, p *problems) {
	res := ctr.Resources
	for _, k := range []string{"cpu", "memory"} {
		if res.Requests[k] == "" {
			p.addf("%s: no %s request", ref, k)
		}
	}
	if res.Limits["memory"] == "" {
		p.addf("%s: no memory limit", ref)
	}
	if cpu, ok := res.Limits["cpu"]; ok {
		m, err := milliCPU(cpu)
		if err != nil {
			p.addf("%s: cpu limit %q: %v", ref, cpu, err)
		} else if m < minCPULimitMilli {
			p.addf("%s: cpu limit %s throttles boot (100m killed a slow boot); set none or >= %dm", ref, cpu, minCPULimitMilli)
		}
	}
	if req, lim := res.Requests["memory"], res.Limits["memory"]; req != "" && lim != "" {
		rb, err1 := bytesQuantity(req)
		lb, err2 := bytesQuantity(lim)
		switch {
		case err1 != nil:
			p.addf("%s: memory request %q: %v", ref, req, err1)
		case err2 != nil:
			p.addf("%s: memory limit %q: %v", ref, lim, err2)
		case lb < rb:
			p.addf("%s: memory limit %s below request %s", ref, lim, req)
		case ours && lb < 64<<20:
			p.addf("%s: memory limit %s below 64Mi (an agent is ~45 MB RSS after a sweep)", ref, lim)
		}
	}
}

func checkSecretRefs(ref string, ctr Container, p *problems) {
	for _, ef := range ctr.EnvFrom {
		if ef.SecretRef != nil {
			p.addf("%s: envFrom secretRef %s: reference keys one by one", ref, ef.SecretRef.Name)
		}
	}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		k := e.ValueFrom.SecretKeyRef
		if k.Name != SecretName {
			p.addf("%s: env %s references Secret %s, not %s", ref, e.Name, k.Name, SecretName)
		}
		if k.Key != e.Name {
			p.addf("%s: env %s reads key %s (keys are named like the variable)", ref, e.Name, k.Key)
		}
	}
}

func checkProbes(ref string, ctr Container, p *problems) {
	probe := func(name string, pr *Probe, path string) bool {
		if pr == nil {
			p.addf("%s: no %s", ref, name)
			return false
		}
		if pr.HTTPGet == nil || pr.HTTPGet.Path != path {
			p.addf("%s: %s must be httpGet %s", ref, name, path)
			return false
		}
		if !portMatches(pr.HTTPGet.Port, ctr.Ports) {
			p.addf("%s: %s port %v is not a container port", ref, name, pr.HTTPGet.Port)
		}
		return true
	}
	okS := probe("startupProbe", ctr.StartupProbe, "/health")
	okL := probe("livenessProbe", ctr.LivenessProbe, "/health")
	probe("readinessProbe", ctr.ReadinessProbe, "/ready")
	if okS {
		// Probe fields default when omitted: period 10, failureThreshold 3.
		budget := orDefault(ctr.StartupProbe.PeriodSeconds, 10) * orDefault(ctr.StartupProbe.FailureThreshold, 3)
		if budget < 30 {
			p.addf("%s: startupProbe allows only %ds to boot; give at least 30s", ref, budget)
		}
	}
	if okL && okS && ctr.LivenessProbe.InitialDelaySeconds > 0 {
		p.addf("%s: livenessProbe initialDelaySeconds %d: the startupProbe is the boot budget", ref, ctr.LivenessProbe.InitialDelaySeconds)
	}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func portMatches(port any, ports []ContainerPort) bool {
	for _, cp := range ports {
		switch v := port.(type) {
		case string:
			if v == cp.Name {
				return true
			}
		case int:
			if v == cp.ContainerPort {
				return true
			}
		}
	}
	return false
}

// readVerbs are the only verbs a read-only rule may grant.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// checkRBAC: no rule mentions Secrets or wildcards; every rule is read-only
// except exactly one: patch on apps/deployments, bound to Sol alone; nothing
// is bound to the core.
func checkRBAC(r *Render, p *problems) {
	writers := map[string]bool{} // role refs granting writes
	for _, role := range r.Roles {
		for i, rule := range role.Rules {
			rref := fmt.Sprintf("%s rule %d", role.Ref(), i+1)
			for _, res := range rule.Resources {
				if res == "secrets" || strings.HasPrefix(res, "secrets/") {
					p.addf("%s: mentions secrets", rref)
				}
				if res == "*" {
					p.addf("%s: resource wildcard", rref)
				}
			}
			for _, g := range rule.APIGroups {
				if g == "*" {
					p.addf("%s: apiGroup wildcard", rref)
				}
			}
			if len(rule.NonResourceURLs) > 0 {
				p.addf("%s: nonResourceURLs are not needed", rref)
			}
			var writes []string
			for _, v := range rule.Verbs {
				if v == "*" {
					p.addf("%s: verb wildcard", rref)
				}
				if !readVerbs[v] {
					writes = append(writes, v)
				}
			}
			if len(writes) == 0 {
				continue
			}
			if pulseLeaseRule(role.Kind, rule) {
				continue // leader-election bookkeeping, not a change to anything the fleet watches
			}
			writers[role.Kind+"/"+role.Metadata.Name] = true
			if !slices.Equal(writes, []string{"patch"}) || !slices.Equal(rule.Verbs, []string{"patch"}) ||
				!slices.Equal(rule.APIGroups, []string{"apps"}) || !slices.Equal(rule.Resources, []string{"deployments"}) {
				p.addf("%s: grants %v on %v/%v; the only write allowed is patch on apps/deployments (rollout restart)", rref, rule.Verbs, rule.APIGroups, rule.Resources)
			}
		}
	}
	sas := map[string]bool{}
	for _, sa := range r.ServiceAccounts {
		sas[sa.Metadata.Name] = true
	}
	for _, b := range r.Bindings {
		for _, s := range b.Subjects {
			if s.Kind != "ServiceAccount" {
				p.addf("%s: subject %s %s: bind only kubecrew ServiceAccounts", b.Ref(), s.Kind, s.Name)
				continue
			}
			if !sas[s.Name] {
				p.addf("%s: subject ServiceAccount %s is not in the render", b.Ref(), s.Name)
			}
			if b.Kind == "ClusterRoleBinding" && s.Namespace == "" {
				p.addf("%s: subject %s has no namespace", b.Ref(), s.Name)
			}
			if s.Name == "kubecrew-core" {
				p.addf("%s: binds the core, which needs no cluster access", b.Ref())
			}
			if writers[b.RoleRef.Kind+"/"+b.RoleRef.Name] && s.Name != "agent-"+ActorSlug {
				p.addf("%s: grants a write to %s; only agent-%s may patch", b.Ref(), s.Name, ActorSlug)
			}
		}
	}
}

// pulseLeaseRule reports whether rule is the pulse leader's: in a
// namespaced Role, on coordination.k8s.io leases only, create (which
// resourceNames cannot restrict) or get/update limited to kubecrew-pulse-*
// Leases.
func pulseLeaseRule(kind string, rule Rule) bool {
	if kind != "Role" || !slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(rule.Resources, []string{"leases"}) {
		return false
	}
	if slices.Equal(rule.Verbs, []string{"create"}) {
		return len(rule.ResourceNames) == 0
	}
	for _, v := range rule.Verbs {
		if v != "get" && v != "update" {
			return false
		}
	}
	if len(rule.ResourceNames) == 0 {
		return false
	}
	for _, n := range rule.ResourceNames {
		if !strings.HasPrefix(n, "kubecrew-pulse-") {
			return false
		}
	}
	return true
}

// checkCore: the core Deployment, its Service, no cluster access, routes.
func checkCore(r *Render, want Expectations, c Contract, p *problems) {
	d := r.Deployment("kubecrew-core")
	if d == nil {
		p.addf("no Deployment kubecrew-core")
		return
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want.CoreReplicas {
		p.addf("%s: replicas %v, want %d", d.Ref(), deref(d.Spec.Replicas), want.CoreReplicas)
	}
	spec := d.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		p.addf("%s: automountServiceAccountToken must be false (the core never touches the cluster)", d.Ref())
	}
	if spec.ServiceAccountName != "kubecrew-core" {
		p.addf("%s: serviceAccountName %q, want kubecrew-core", d.Ref(), spec.ServiceAccountName)
	}
	for _, sa := range r.ServiceAccounts {
		if sa.Metadata.Name == "kubecrew-core" && (sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken) {
			p.addf("%s: automountServiceAccountToken must be false", sa.Ref())
		}
	}
	if d.Spec.Template.Metadata.Labels[Component] != "core" {
		p.addf("%s: pod component label must be core", d.Ref())
	}
	if len(spec.Containers) != 1 {
		p.addf("%s: want one container", d.Ref())
		return
	}
	ctr := spec.Containers[0]
	if !hasPort(ctr.Ports, 8080) {
		p.addf("%s: no container port 8080", d.Ref())
	}
	if len(ctr.Command) == 0 || !strings.HasSuffix(ctr.Command[0], "/core") {
		p.addf("%s: command %v does not run the core binary", d.Ref(), ctr.Command)
	}
	env := effectiveEnv(r, ctr)
	checkEnvNames(d.Ref(), env, c.CoreEnv, p)
	for _, k := range []string{"AUTH_TOKEN", "DATABASE_URL"} {
		checkSecretEnv(d.Ref(), ctr, k, k == "DATABASE_URL" && want.DatabaseRequired, p)
	}
	checkNamespaceEnv(d.Ref(), ctr, p)
	// ROUTES_FILE must point at a file a ConfigMap volume provides.
	if rf := env["ROUTES_FILE"]; rf.value != "" {
		if !mountedConfigMapFile(r, spec, ctr, rf.value) {
			p.addf("%s: ROUTES_FILE %s is not a key of a mounted ConfigMap", d.Ref(), rf.value)
		}
	}
	checkService(r, "kubecrew-core", d, 8080, p)
	// AGENT_CALL_TIMEOUT must stay below ALERT_COOLDOWN (the core refuses to
	// start otherwise) and above the agents' model-call ceiling.
	checkTimeouts(r, d.Ref(), env, p)
	// CORE_REPLICAS tells the core it shares DATABASE_URL with others: with
	// more than one, a replica that cannot reach the database is not ready
	// (README "Readiness"). It must say what the Deployment runs.
	if d.Spec.Replicas != nil && env["CORE_REPLICAS"].value != strconv.Itoa(*d.Spec.Replicas) {
		p.addf("%s: CORE_REPLICAS %q, but the Deployment runs %d replicas", d.Ref(), env["CORE_REPLICAS"].value, *d.Spec.Replicas)
	}
}

func checkTimeouts(r *Render, ref string, env map[string]envValue, p *problems) {
	call, okC := parseSeconds(env["AGENT_CALL_TIMEOUT"].value)
	cool, okK := parseSeconds(env["ALERT_COOLDOWN"].value)
	if okC && okK && call >= cool {
		p.addf("%s: AGENT_CALL_TIMEOUT %s must be below ALERT_COOLDOWN %s", ref, env["AGENT_CALL_TIMEOUT"].value, env["ALERT_COOLDOWN"].value)
	}
	if a := r.Deployment("agent-platform-sre"); a != nil && okC && len(a.Spec.Template.Spec.Containers) > 0 {
		if llm, ok := parseSeconds(effectiveEnv(r, a.Spec.Template.Spec.Containers[0])["LLM_TIMEOUT"].value); ok && call <= llm {
			p.addf("%s: AGENT_CALL_TIMEOUT %s must exceed the agents' LLM_TIMEOUT (the caller hung up mid-call)", ref, env["AGENT_CALL_TIMEOUT"].value)
		}
	}
}

// checkAgents: one Deployment and Service per persona, persona by env, the
// persona files owning their settings, Secrets optional.
func checkAgents(r *Render, want Expectations, c Contract, p *problems) {
	seen := map[string]bool{}
	for _, a := range Fleet {
		name := "agent-" + a.Slug
		seen[name] = true
		d := r.Deployment(name)
		if d == nil {
			p.addf("no Deployment %s", name)
			continue
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != a.Replicas {
			p.addf("%s: replicas %v, want %d", d.Ref(), deref(d.Spec.Replicas), a.Replicas)
		}
		spec := d.Spec.Template.Spec
		if spec.ServiceAccountName != name {
			p.addf("%s: serviceAccountName %q, want %s", d.Ref(), spec.ServiceAccountName, name)
		}
		if d.Spec.Template.Metadata.Labels[Component] != "agent" {
			p.addf("%s: pod component label must be agent", d.Ref())
		}
		if len(spec.Containers) != 1 {
			p.addf("%s: want one container", d.Ref())
			continue
		}
		ctr := spec.Containers[0]
		if !hasPort(ctr.Ports, 8000) {
			p.addf("%s: no container port 8000", d.Ref())
		}
		if len(ctr.Command) == 0 || !strings.HasSuffix(ctr.Command[0], "/agent") {
			p.addf("%s: command %v does not run the agent binary", d.Ref(), ctr.Command)
		}
		env := effectiveEnv(r, ctr)
		if v := env["AGENT_PERSONA"].value; v != a.Slug && v != a.Persona {
			p.addf("%s: AGENT_PERSONA %q, want %s", d.Ref(), v, a.Slug)
		}
		checkEnvNames(d.Ref(), env, c.AgentEnv, p)
		for k, v := range env {
			if !c.PersonaKeys[k] {
				continue
			}
			// The pulse component turns Noor's in-process timer off on
			// purpose; anything else shadows the persona files.
			if v.from == "env" && k == "PULSE_ENABLED" && want.PulseCronJob && a.Slug == "platform-sre" {
				continue
			}
			p.addf("%s: %s is set by the %s and silently overrides agents/%s/agent.env", d.Ref(), k, v.from, a.Persona)
		}
		for _, k := range []string{"LLM_API_KEY", "AUTH_TOKEN", "GITHUB_TOKEN", "DISCORD_WEBHOOK_URL", "DATABASE_URL"} {
			checkSecretEnv(d.Ref(), ctr, k, k == "DATABASE_URL" && want.DatabaseRequired, p)
		}
		checkNamespaceEnv(d.Ref(), ctr, p)
		checkService(r, name, d, 8000, p)
		// The default peer URL must reach this Service.
		tmpl := env["PEER_URL_TEMPLATE"].value
		if tmpl == "" {
			tmpl = "http://agent-{slug}.{namespace}.svc:8000"
		}
		u := strings.NewReplacer("{slug}", a.Slug, "{namespace}", d.Metadata.Namespace).Replace(tmpl)
		if wantURL := "http://" + name + "." + d.Metadata.Namespace + ".svc:8000"; u != wantURL {
			p.addf("%s: PEER_URL_TEMPLATE gives %s, but the Service is %s", d.Ref(), u, wantURL)
		}
	}
	for _, d := range r.Deployments {
		if d.Spec.Template.Metadata.Labels[Component] == "agent" && !seen[d.Metadata.Name] {
			p.addf("%s: not a known persona (agent-{slug} with slug one of the five)", d.Ref())
		}
	}
}

type envValue struct {
	value string
	from  string // "env", "ConfigMap <name>", "fieldRef", "Secret"
}

// effectiveEnv resolves what the container sees: envFrom ConfigMaps first,
// env entries win. Secret values are unknown and recorded as from=Secret.
func effectiveEnv(r *Render, ctr Container) map[string]envValue {
	out := map[string]envValue{}
	for _, ef := range ctr.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		for _, cm := range r.ConfigMaps {
			if cm.Metadata.Name == ef.ConfigMapRef.Name {
				for k, v := range cm.Data {
					out[k] = envValue{value: v, from: "ConfigMap " + cm.Metadata.Name}
				}
			}
		}
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = envValue{value: e.Value, from: "env"}
		case e.ValueFrom.FieldRef != nil:
			out[e.Name] = envValue{from: "fieldRef " + e.ValueFrom.FieldRef.FieldPath}
		default:
			out[e.Name] = envValue{from: "Secret"}
		}
	}
	return out
}

// checkEnvNames: a misspelt variable is silently ignored by the binary.
func checkEnvNames(ref string, env map[string]envValue, known map[string]bool, p *problems) {
	if known == nil {
		return
	}
	for k, v := range env {
		if !known[k] {
			p.addf("%s: %s (from %s) is not a variable the binary reads", ref, k, v.from)
		}
	}
}

func checkSecretEnv(ref string, ctr Container, name string, required bool, p *problems) {
	for _, e := range ctr.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			p.addf("%s: %s must come from Secret %s (secretKeyRef), not a literal", ref, name, SecretName)
			return
		}
		opt := e.ValueFrom.SecretKeyRef.Optional
		switch {
		case required && opt != nil && *opt:
			p.addf("%s: %s must be required here (optional: false)", ref, name)
		case !required && (opt == nil || !*opt):
			p.addf("%s: %s must be optional: true (an absent key means the feature is off)", ref, name)
		}
		return
	}
	p.addf("%s: no %s from Secret %s", ref, name, SecretName)
}

func checkNamespaceEnv(ref string, ctr Container, p *problems) {
	for _, e := range ctr.Env {
		if e.Name == "AGENT_NAMESPACE" {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				p.addf("%s: AGENT_NAMESPACE must come from the downward API (fieldRef metadata.namespace)", ref)
			}
			return
		}
	}
	p.addf("%s: no AGENT_NAMESPACE", ref)
}

func checkService(r *Render, name string, d *Deployment, port int, p *problems) {
	for _, s := range r.Services {
		if s.Metadata.Name != name {
			continue
		}
		if len(s.Spec.Selector) == 0 {
			p.addf("%s: no selector", s.Ref())
		}
		for k, v := range s.Spec.Selector {
			if d.Spec.Template.Metadata.Labels[k] != v {
				p.addf("%s: selector %s=%s does not select %s's pods", s.Ref(), k, v, d.Metadata.Name)
			}
		}
		for _, sp := range s.Spec.Ports {
			if sp.Port == port {
				if !portMatches(sp.TargetPort, d.Spec.Template.Spec.Containers[0].Ports) {
					p.addf("%s: targetPort %v is not a container port of %s", s.Ref(), sp.TargetPort, d.Metadata.Name)
				}
				return
			}
		}
		p.addf("%s: no port %d", s.Ref(), port)
		return
	}
	p.addf("no Service %s for %s", name, d.Ref())
}

func mountedConfigMapFile(r *Render, spec PodSpec, ctr Container, path string) bool {
	_, ok := configMapFile(r, spec, ctr, path)
	return ok
}

// configMapFile returns the content a ConfigMap volume mounted in ctr puts
// at path.
func configMapFile(r *Render, spec PodSpec, ctr Container, path string) (string, bool) {
	for _, m := range ctr.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimRight(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			for _, cm := range r.ConfigMaps {
				if cm.Metadata.Name != v.ConfigMap.Name {
					continue
				}
				key := rel
				if len(v.ConfigMap.Items) > 0 {
					key = ""
					for _, it := range v.ConfigMap.Items {
						if it.Path == rel {
							key = it.Key
						}
					}
				}
				data, ok := cm.Data[key]
				return data, ok
			}
		}
	}
	return "", false
}

// checkNetwork: every agent pod is selected by a policy that admits only
// part-of=kubecrew pods; the core admits anyone on 8080.
func checkNetwork(r *Render, p *problems) {
	for _, ot := range r.PodTemplates() {
		labels := ot.Template.Metadata.Labels
		comp := labels[Component]
		if comp != "agent" && comp != "core" {
			continue
		}
		var selecting []NetworkPolicy
		for _, np := range r.NetworkPolicies {
			if selects(np.Spec.PodSelector, labels) && slices.Contains(np.Spec.PolicyTypes, "Ingress") {
				selecting = append(selecting, np)
			}
		}
		if len(selecting) == 0 {
			p.addf("%s: no NetworkPolicy restricts ingress to its pods", ot.Owner.Ref())
			continue
		}
		for _, np := range selecting {
			for i, in := range np.Spec.Ingress {
				if comp == "core" {
					for _, port := range in.Ports {
						if fmt.Sprint(port.Port) != "8080" {
							p.addf("%s ingress %d: the core exposes only 8080, got %v", np.Ref(), i+1, port.Port)
						}
					}
					continue
				}
				if len(in.From) == 0 {
					p.addf("%s ingress %d: admits every source; agents take traffic only from the fleet", np.Ref(), i+1)
				}
				for _, f := range in.From {
					if f.IPBlock != nil || f.NamespaceSelector != nil || f.PodSelector == nil ||
						f.PodSelector.MatchLabels[PartOf] != PartOfValue {
						p.addf("%s ingress %d: admits sources outside %s=%s", np.Ref(), i+1, PartOf, PartOfValue)
					}
				}
			}
		}
	}
}

func selects(sel LabelSelector, labels map[string]string) bool {
	if len(sel.MatchExpressions) > 0 {
		return false
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkOverlay: the per-overlay expectations.
func checkOverlay(r *Render, want Expectations, p *problems) {
	for _, ot := range r.PodTemplates() {
		for _, ctr := range ot.Template.Spec.Containers {
			if !strings.HasPrefix(ctr.Image, "ghcr.io/kubecrew/") {
				continue
			}
			tag := ""
			if i := strings.LastIndex(ctr.Image, ":"); i > strings.LastIndex(ctr.Image, "/") {
				tag = ctr.Image[i+1:]
			}
			if want.ImageTag != "" && tag != want.ImageTag {
				p.addf("%s: image %s, want tag %s", ot.Owner.Ref(), ctr.Image, want.ImageTag)
			}
		}
	}
	if want.LogLevel != "" {
		for _, name := range []string{"kubecrew-agent", "kubecrew-core"} {
			cm := r.ConfigMap(name)
			if cm == nil {
				p.addf("no ConfigMap %s", name)
			} else if cm.Data["LOG_LEVEL"] != want.LogLevel {
				p.addf("%s: LOG_LEVEL %q, want %q", cm.Ref(), cm.Data["LOG_LEVEL"], want.LogLevel)
			}
		}
	}
	if want.PDB {
		core := r.Deployment("kubecrew-core")
		found := false
		for _, pdb := range r.PDBs {
			if core != nil && selects(pdb.Spec.Selector, core.Spec.Template.Metadata.Labels) && fmt.Sprint(pdb.Spec.MinAvailable) == "1" {
				found = true
			}
		}
		if !found {
			p.addf("no PodDisruptionBudget keeping one core pod (minAvailable 1)")
		}
	}
	crons := 0
	for _, cj := range r.CronJobs {
		crons++
		ctr := cj.Spec.JobTemplate.Spec.Template.Spec.Containers
		script := ""
		for _, c := range ctr {
			script += strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
			checkSecretEnv(cj.Ref(), c, "AUTH_TOKEN", false, p)
		}
		if !strings.Contains(script, "agent-platform-sre") || !strings.Contains(script, "/pulse") || !strings.Contains(script, "POST") {
			p.addf("%s: does not POST /pulse on agent-platform-sre", cj.Ref())
		}
	}
	if want.PulseCronJob {
		if crons == 0 {
			p.addf("no pulse CronJob")
		}
		if d := r.Deployment("agent-platform-sre"); d != nil && len(d.Spec.Template.Spec.Containers) > 0 {
			if v := effectiveEnv(r, d.Spec.Template.Spec.Containers[0])["PULSE_ENABLED"]; v.value != "false" {
				p.addf("%s: PULSE_ENABLED must be false while the CronJob pulses (one clock, not two)", d.Ref())
			}
		}
	} else if crons > 0 {
		p.addf("unexpected CronJob")
	}
}

func hasPort(ports []ContainerPort, n int) bool {
	for _, p := range ports {
		if p.ContainerPort == n {
			return true
		}
	}
	return false
}

func deref(p *int) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func keys(m map[string]bool) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// milliCPU parses a CPU quantity ("100m", "0.5", "2").
func milliCPU(s string) (int, error) {
	if strings.HasSuffix(s, "m") {
		return strconv.Atoi(strings.TrimSuffix(s, "m"))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a CPU quantity")
	}
	return int(f * 1000), nil
}

// bytesQuantity parses the memory quantities the manifests use (Ki, Mi, Gi,
// k, M, G, plain bytes).
func bytesQuantity(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			n, err := strconv.ParseInt(strings.TrimSuffix(s, u.suffix), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("not a memory quantity")
			}
			return n * u.mult, nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a memory quantity")
	}
	return n, nil
}

// parseSeconds parses a Go duration ("600s", "30m") into seconds.
func parseSeconds(s string) (float64, bool) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false
	}
	return d.Seconds(), true
}

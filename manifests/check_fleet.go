package manifests

// The checks of the fleet's own Deployments: the core and the five agents,
// their environment, Services and mounted configuration.
import (
	"fmt"
	"strconv"
	"strings"
)

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
		checkSecretEnv(d.Ref(), ctr, k, SecretName, want.Secrets, required(k, want), p)
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
	// (docs/MANUAL.md "Readiness"). It must say what the Deployment runs.
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
	forge := map[string][]string{} // Secret/key → the agents reading their forge token from it
	for _, a := range Fleet {
		name := "agent-" + a.Slug
		seen[name] = true
		d := r.Deployment(name)
		replicas, installed := a.Replicas, true
		if want.Agents != nil {
			replicas, installed = want.Agents[a.Slug]
		}
		switch {
		case d == nil && installed:
			p.addf("no Deployment %s", name)
			continue
		case d == nil:
			continue
		case !installed:
			p.addf("%s: persona %s is not meant to be installed", d.Ref(), a.Slug)
			continue
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
			p.addf("%s: replicas %v, want %d", d.Ref(), deref(d.Spec.Replicas), replicas)
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
		for _, k := range []string{"LLM_API_KEY", "AUTH_TOKEN", "DISCORD_WEBHOOK_URL", "DATABASE_URL"} {
			checkSecretEnv(d.Ref(), ctr, k, SecretName, want.Secrets, required(k, want), p)
		}
		// Forge credentials are each agent's own: one shared account would
		// make Vera's approval of Sol's PR a self-approval GitHub refuses.
		for _, k := range ForgeKeys {
			if k != "GITHUB_TOKEN" && secretOf(ctr, k) == "" {
				continue // a GitHub App's keys are optional in a render (the Helm chart has none yet)
			}
			checkSecretEnv(d.Ref(), ctr, k, ForgeSecretName(a.Slug), want.Secrets, false, p)
			forge[secretOf(ctr, k)] = append(forge[secretOf(ctr, k)], a.Slug)
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName != ForgeSecretName(a.Slug) {
				p.addf("%s: volume %s mounts Secret %s, want its own %s", d.Ref(), v.Name, v.Secret.SecretName, ForgeSecretName(a.Slug))
			}
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
	for ref, slugs := range forge {
		if ref != "" && len(slugs) > 1 {
			p.addf("agents %s read their forge token from one Secret %s: GitHub refuses an approval from the PR's opener", strings.Join(slugs, ", "), ref)
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

// secretOf names the Secret and key an env var is read from ("" if none).
func secretOf(ctr Container, name string) string {
	for _, e := range ctr.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

// checkSecretEnv: name comes from Secret secret (or one the user named,
// others), optional unless required.
func checkSecretEnv(ref string, ctr Container, name, secret string, others map[string]bool, required bool, p *problems) {
	for _, e := range ctr.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			p.addf("%s: %s must come from Secret %s (secretKeyRef), not a literal", ref, name, secret)
			return
		}
		if got := e.ValueFrom.SecretKeyRef.Name; got != secret && !others[got] {
			p.addf("%s: %s comes from Secret %s, want %s", ref, name, got, secret)
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
	p.addf("%s: no %s from Secret %s", ref, name, secret)
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

// checkRollout: an upgrade never takes the core's serving capacity away
// and needs nothing but the new pods (docs/ARCHITECTURE.md, "Upgrades"):
// the core rolls with maxUnavailable 0, old and new replicas side by side
// on the schema the first new one migrates at start; no Job or Helm hook
// migrates or waits in between.
func checkRollout(r *Render, p *problems) {
	if d := r.Deployment("kubecrew-core"); d != nil {
		s := d.Spec.Strategy
		if s.Type != "RollingUpdate" || s.RollingUpdate == nil || fmt.Sprint(s.RollingUpdate.MaxUnavailable) != "0" {
			p.addf("%s: strategy must be RollingUpdate with maxUnavailable: 0 (old and new cores serve side by side during an upgrade)", d.Ref())
		}
	}
	for _, h := range r.All {
		if h.Kind == "Job" || h.Metadata.Annotations["helm.sh/hook"] != "" {
			p.addf("%s: an upgrade is the new pods alone (the core migrates at start under a lock), not a Job or hook", h.Ref())
		}
	}
}

// required reports whether Secret key k must be referenced with optional:
// false: AUTH_TOKEN always (no service starts without it, docs/MANUAL.md,
// "Authentication"), DATABASE_URL where the render wants a database.
func required(k string, want Expectations) bool {
	return k == "AUTH_TOKEN" || (k == "DATABASE_URL" && want.DatabaseRequired)
}

package manifests

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// Labels every kubecrew object carries. Sol refuses to act on workloads
// labelled PartOf=PartOfValue (the loop restarted its own detector).
const (
	PartOf      = "app.kubernetes.io/part-of"
	PartOfValue = "kubecrew"
	NameLabel   = "app.kubernetes.io/name"
	Component   = "app.kubernetes.io/component"
)

// SecretName is the Secret the fleet shares, read by reference only.
const SecretName = "kubecrew-secrets"

// ForgeKeys are the forge credentials each agent reads from its own Secret
// (ForgeSecretName), never from the shared one.
var ForgeKeys = []string{"GITHUB_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_INSTALLATION_ID"}

// ForgeSecretName is the Secret holding agent slug's forge credentials.
func ForgeSecretName(slug string) string { return "kubecrew-forge-" + slug }

// Agent is one persona's workload.
type Agent struct {
	Persona, Slug string
	// Replicas by default: Dax and Ada advise on demand and start at 0.
	Replicas int
}

// Fleet is the five personas of pkg/persona, in the fleet's order, with the
// replicas the base manifests run (docs/ARCHITECTURE.md).
var Fleet = fleet(persona.All)

// advisors start at 0 replicas: they advise on demand.
var advisors = map[string]bool{persona.NameDax: true, persona.NameAda: true}

func fleet(all []persona.Info) []Agent {
	out := make([]Agent, len(all))
	for i, p := range all {
		out[i] = Agent{Persona: p.Name, Slug: p.Slug, Replicas: 1}
		if advisors[p.Name] {
			out[i].Replicas = 0
		}
	}
	return out
}

// ActorSlug is the only agent allowed a cluster write.
const ActorSlug = persona.SlugSol

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
	// Agents: the personas installed, by slug, with their replicas; the
	// others must be absent (nil = all five with Fleet's replicas). The Helm
	// chart lets a user choose (agents.personas.<slug>).
	Agents map[string]int
	// Secrets: Secrets other than SecretName that references may name, with
	// keys of any name (the Helm chart's {secretName, key} references).
	Secrets map[string]bool
	// ServiceMonitors: the core's and every agent's Service are scraped
	// (components/monitoring, monitoring.serviceMonitor.enabled).
	ServiceMonitors bool
	// ScrapeFrom: the agents' NetworkPolicy has one rule admitting
	// Prometheus on 8000 only (monitoring.allowScrape.enabled).
	ScrapeFrom bool
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
	checkPods(r, want, c, &p)
	checkRBAC(r, &p)
	checkCore(r, want, c, &p)
	checkRollout(r, &p)
	checkAgents(r, want, c, &p)
	checkNetwork(r, want, &p)
	checkServiceMonitors(r, want, &p)
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

// readVerbs are the only verbs a read-only rule may grant.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// checkRBAC: no rule mentions Secrets or wildcards; every rule is read-only
// except the rollout restart's two (restartRule), bound to Sol alone; nothing
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
			if !restartRule(rule) {
				p.addf("%s: grants %v on %v/%v; the only writes allowed are patch on apps/deployments and create on pods/eviction (rollout restart)", rref, rule.Verbs, rule.APIGroups, rule.Resources)
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
				p.addf("%s: grants a write to %s; only agent-%s may restart (patch, evict)", b.Ref(), s.Name, ActorSlug)
			}
		}
	}
}

// restartRule reports whether rule is one of the rollout restart's two
// writes (docs/MANUAL.md, "Restarts that stick"): patch on apps/deployments (the
// restartedAt annotation), or create on pods/eviction (evicting a GitOps-
// applied workload's pods one at a time) — each alone in its rule.
func restartRule(rule Rule) bool {
	one := func(verb, group, res string) bool {
		return slices.Equal(rule.Verbs, []string{verb}) && slices.Equal(rule.APIGroups, []string{group}) &&
			slices.Equal(rule.Resources, []string{res}) && len(rule.ResourceNames) == 0
	}
	return one("patch", "apps", "deployments") || one("create", "", "pods/eviction")
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

// checkNetwork: every agent pod is selected by a policy that admits only
// part-of=kubecrew pods (and, when expected, the scraper's rule); the core
// admits on 8080 only sources a rule names (the fleet, the operator's
// namespaces), never everyone.
func checkNetwork(r *Render, want Expectations, p *problems) {
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
		scrapers := 0
		for _, np := range selecting {
			for i, in := range np.Spec.Ingress {
				if comp == "core" {
					if len(in.From) == 0 {
						p.addf("%s ingress %d: admits every source; the core takes traffic from the fleet and the namespaces the operator names only", np.Ref(), i+1)
					}
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
				if want.ScrapeFrom && scrapeRule(in) {
					scrapers++
					continue
				}
				for _, f := range in.From {
					if f.IPBlock != nil || f.NamespaceSelector != nil || f.PodSelector == nil ||
						f.PodSelector.MatchLabels[PartOf] != PartOfValue {
						p.addf("%s ingress %d: admits sources outside %s=%s", np.Ref(), i+1, PartOf, PartOfValue)
					}
				}
			}
		}
		if comp == "agent" && want.ScrapeFrom && scrapers != 1 {
			p.addf("%s: %d ingress rules admit a scraper on 8000 alone, want 1 (monitoring.allowScrape)", ot.Owner.Ref(), scrapers)
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
			checkSecretEnv(cj.Ref(), c, "AUTH_TOKEN", SecretName, want.Secrets, true, p) // the agents require it (fail closed)
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

package manifests

// The checks of every pod template: probes, resources, security context
// and Secret references.
import (
	"slices"
	"strings"
)

// checkPods: probes, resources, security context, Secret references.
func checkPods(r *Render, want Expectations, c Contract, p *problems) {
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
			checkSecretRefs(cref, ctr, want.Secrets, p)
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
			switch {
			case v.Secret == nil:
			case !strings.HasPrefix(v.Secret.SecretName, ForgeSecretName("")):
				p.addf("%s: volume %s mounts a Secret; the fleet takes Secrets only as optional env references (and an agent's own forge Secret for its App key)", ref, v.Name)
			case v.Secret.Optional == nil || !*v.Secret.Optional:
				p.addf("%s: volume %s: the forge Secret must be optional: true (absent = no App)", ref, v.Name)
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

func checkSecretRefs(ref string, ctr Container, others map[string]bool, p *problems) {
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
		if others[k.Name] {
			continue // a Secret of the user's naming: its keys are theirs too
		}
		switch {
		case slices.Contains(ForgeKeys, e.Name):
			// an agent's own forge Secret; checkFleet checks whose
			if !strings.HasPrefix(k.Name, ForgeSecretName("")) {
				p.addf("%s: env %s references Secret %s, not an agent's %s<slug>", ref, e.Name, k.Name, ForgeSecretName(""))
			}
		case k.Name != SecretName:
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

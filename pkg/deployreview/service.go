package deployreview

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkServices runs SV001–SV003 on every workload a Service in the same
// namespace selects (a Service whose workloads live elsewhere is not
// judged). A workload behind two Services is reported once.
func checkServices(files []manifestFile) []Finding {
	var all []object
	for _, f := range files {
		all = append(all, f.objects...)
	}
	var out []Finding
	seen := map[string]bool{}
	for _, svc := range all {
		if svc.kind != "Service" || scalar(dig(svc.root, "spec", "type")) == "ExternalName" {
			continue
		}
		sel := dig(svc.root, "spec", "selector")
		for _, w := range all {
			spec, long := podSpec(w)
			if !long || w.namespace != svc.namespace || !selects(sel, podLabels(w)) {
				continue
			}
			add := func(id string, line int, msg string) {
				f := finding(id, w.file, line, msg)
				f.Kind, f.Object = w.kind, strings.TrimPrefix(w.namespace+"/"+w.name, "/")
				if k := f.Rule + " " + f.Where(); !seen[k] {
					seen[k] = true
					out = append(out, f)
				}
			}
			checkBehindService(svc, w, spec, add)
		}
	}
	return out
}

// checkBehindService: SV001 per container without a readiness probe,
// SV002 for a grace period under 5s, SV003 for several replicas none of
// whose containers has a preStop hook.
func checkBehindService(svc, w object, spec *yaml.Node, add func(id string, line int, msg string)) {
	svcName := strings.TrimPrefix(svc.namespace+"/"+svc.name, "/")
	ctrs := get(spec, "containers")
	if ctrs == nil || ctrs.Kind != yaml.SequenceNode || len(ctrs.Content) == 0 {
		return
	}
	preStop := false
	for _, c := range ctrs.Content {
		if get(c, "readinessProbe") == nil {
			add("SV001", keyLine(c, "name"), fmt.Sprintf("Service %s sends traffic to container %s of %s %s, which has no readinessProbe", svcName, scalar(get(c, "name")), w.kind, w.name))
		}
		if dig(c, "lifecycle", "preStop") != nil {
			preStop = true
		}
	}
	if tg := get(spec, "terminationGracePeriodSeconds"); tg != nil {
		if n, err := strconv.Atoi(tg.Value); err == nil && n < 5 {
			add("SV002", tg.Line, fmt.Sprintf("%s %s behind Service %s is killed %ds after SIGTERM, before in-flight requests can finish", w.kind, w.name, svcName, n))
		}
	}
	replicas, line := 2, keyLine(ctrs.Content[0], "name") // a DaemonSet runs on every node
	if w.kind != "DaemonSet" {
		replicas = 1
		if rn := dig(w.root, "spec", "replicas"); rn != nil {
			replicas, _ = strconv.Atoi(rn.Value)
		}
	}
	if replicas > 1 && !preStop {
		add("SV003", line, fmt.Sprintf("%s %s behind Service %s has no preStop hook: requests still routed to a terminating pod fail on every rollout", w.kind, w.name, svcName))
	}
}

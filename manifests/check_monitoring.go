package manifests

import (
	"fmt"
	"slices"
)

// scrapeRule: an agent ingress rule that admits a named scraper (the
// Prometheus pods monitoring.allowScrape or components/monitoring select)
// on the agents' port 8000 and nothing else: every peer is chosen by a
// non-empty namespace or pod selector (an empty one would admit every pod
// of the cluster or of the namespace), none by address.
func scrapeRule(in IngressRule) bool {
	if len(in.From) == 0 || len(in.Ports) != 1 || fmt.Sprint(in.Ports[0].Port) != "8000" {
		return false
	}
	named := func(s *LabelSelector) bool {
		return s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0)
	}
	for _, f := range in.From {
		if f.IPBlock != nil || (!named(f.NamespaceSelector) && !named(f.PodSelector)) {
			return false
		}
		if f.PodSelector != nil && f.PodSelector.MatchLabels[PartOf] == PartOfValue {
			return false // the fleet's own rule
		}
	}
	return true
}

// checkServiceMonitors: each ServiceMonitor scrapes /metrics on a port its
// Services have, with honorLabels (the binaries' own `endpoint` label must
// not become exported_endpoint: the rules query it); when expected, the
// core's and every agent's Service is scraped.
func checkServiceMonitors(r *Render, want Expectations, p *problems) {
	scraped := map[string]bool{} // Service ref
	for _, sm := range r.ServiceMonitors {
		var svcs []Service
		for _, s := range r.Services {
			if s.Metadata.Namespace == sm.Metadata.Namespace && len(sm.Spec.Selector.MatchLabels) > 0 &&
				selects(sm.Spec.Selector, s.Metadata.Labels) {
				svcs = append(svcs, s)
			}
		}
		if len(svcs) == 0 {
			p.addf("%s: selects no Service", sm.Ref())
		}
		if len(sm.Spec.Endpoints) == 0 {
			p.addf("%s: no endpoints", sm.Ref())
		}
		for i, ep := range sm.Spec.Endpoints {
			if ep.Path != "/metrics" || !ep.HonorLabels {
				p.addf("%s endpoint %d: path %q honorLabels %v, want /metrics and true", sm.Ref(), i+1, ep.Path, ep.HonorLabels)
			}
			for _, s := range svcs {
				if !slices.ContainsFunc(s.Spec.Ports, func(sp ServicePort) bool { return sp.Name == ep.Port }) {
					p.addf("%s endpoint %d: %s has no port named %q", sm.Ref(), i+1, s.Ref(), ep.Port)
					continue
				}
				scraped[s.Ref()] = true
			}
		}
	}
	if !want.ServiceMonitors {
		if len(r.ServiceMonitors) > 0 {
			p.addf("%d ServiceMonitors rendered, none expected", len(r.ServiceMonitors))
		}
		return
	}
	for _, s := range r.Services {
		if c := s.Metadata.Labels[Component]; (c == "core" || c == "agent") && !scraped[s.Ref()] {
			p.addf("%s: no ServiceMonitor scrapes it", s.Ref())
		}
	}
}

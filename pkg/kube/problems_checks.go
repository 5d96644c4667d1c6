package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// The checks beyond pods, workloads, jobs and nodes: what an SRE expects
// from a cluster check (docs/MANUAL.md "What cluster_problems checks").

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// selected is what the live pods a Service with a selector selects add
// up to (sweep.go folds the pods in as they are listed).
func (a *analysis) selected(svc *service) *svcPods {
	if sp := a.svcPods[svc.ns+"/"+svc.name]; sp != nil {
		return sp
	}
	return &svcPods{}
}

// templateOwners are the listed workloads of ns whose pod template a
// selector matches, with their desired replicas (indexWorkloads keeps them
// per Service with a selector, until a live pod is selected).
func (a *analysis) templateOwners(sp *svcPods) map[owner]int32 {
	out := map[owner]int32{}
	for _, t := range sp.tmpl {
		out[t.o] = t.desired
	}
	return out
}

// sortedOwners orders a set of owners by kind and name.
func sortedOwners(set map[owner]bool) []owner {
	owners := make([]owner, 0, len(set))
	for o := range set {
		owners = append(owners, o)
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i].kind+owners[i].name < owners[j].kind+owners[j].name })
	return owners
}

// attachService records on the owners' first problems that svc has no
// ready endpoint because of them; false when some owner has no problem.
func (a *analysis) attachService(ns string, owners []owner, svc string) bool {
	for _, o := range owners {
		if !a.broken(ns, o.kind, o.name) {
			return false
		}
	}
	for _, o := range owners {
		g := a.primary(ns, o)
		g.Services = append(g.Services, svc)
	}
	return len(owners) > 0
}

// primary is the problem of an owner that evidence attaches to: the
// first by check order, then reason.
func (a *analysis) primary(ns string, o owner) *Problem {
	gs := a.byOwner[wkey(ns, o.kind, o.name)]
	if len(gs) == 0 {
		return nil
	}
	best := gs[0]
	for _, g := range gs[1:] {
		if cr, br := checkRank(g.Check), checkRank(best.Check); cr < br || (cr == br && g.Reason < best.Reason) {
			best = g
		}
	}
	return best
}

// checkServices: a Service with a selector whose pods exist but none is
// ready, or that selects no pod while no workload of its selector is
// scaled to zero on purpose. When the pods' owners are reported already,
// the Service joins their line instead of making its own.
func (a *analysis) checkServices() {
	if !a.s.listed[listServices] || !a.s.listed[listPods] {
		return
	}
	for i := range a.s.services {
		svc := &a.s.services[i]
		if len(svc.sel) == 0 || svc.external {
			continue
		}
		sp := a.selected(svc)
		if sp.ready {
			continue
		}
		if sp.n > 0 {
			owners := sortedOwners(sp.owners)
			if a.attachService(svc.ns, owners, svc.name) {
				continue
			}
			a.add(CheckServices, api.SeverityHigh, svc.ns, owner{"Service", svc.name}, ReasonServiceNoReadyPods, "",
				fmt.Sprintf("selector %s matches %d pod(s), none ready: the Service has no endpoint", labels.SelectorFromSet(svc.sel), sp.n), "", 0)
			continue
		}
		tmpl := a.templateOwners(sp)
		scaledToZero := false
		var owners []owner
		for o, desired := range tmpl {
			if desired == 0 {
				scaledToZero = true
			} else {
				owners = append(owners, o)
			}
		}
		sort.Slice(owners, func(i, j int) bool { return owners[i].kind+owners[i].name < owners[j].kind+owners[j].name })
		if scaledToZero || a.attachService(svc.ns, owners, svc.name) {
			continue
		}
		detail := fmt.Sprintf("selector %s matches no pod and no workload template", labels.SelectorFromSet(svc.sel))
		base := api.SeverityMedium
		if len(owners) > 0 {
			detail = fmt.Sprintf("selector %s matches no pod; %s %s has none running", labels.SelectorFromSet(svc.sel), owners[0].kind, owners[0].name)
			base = api.SeverityHigh
		}
		a.add(CheckServices, base, svc.ns, owner{"Service", svc.name}, ReasonServiceNoPods, "", detail, "", 0)
	}
}

// checkPVCs: a claim Lost; a claim Pending StuckAfter after creation that
// a pod waits for, or whose class binds immediately (a
// WaitForFirstConsumer claim no pod uses yet is Pending by design).
func (a *analysis) checkPVCs() {
	if !a.s.listed[listPVCs] {
		return
	}
	usedBy := a.usedBy
	classes := map[string]*storagev1.StorageClass{}
	defaultClass := ""
	for i := range a.s.classes {
		sc := &a.s.classes[i]
		classes[sc.Name] = sc
		if sc.Annotations[defaultClassAnnotation] == "true" && (defaultClass == "" || sc.Name < defaultClass) {
			defaultClass = sc.Name
		}
	}
	classesKnown := a.s.listed[listStorageClasses]
	for i := range a.s.pvcs {
		c := &a.s.pvcs[i]
		o := owner{"PersistentVolumeClaim", c.Name}
		switch c.Status.Phase {
		case corev1.ClaimLost:
			a.add(CheckPVCs, api.SeverityHigh, c.Namespace, o, ReasonPVCLost, "",
				fmt.Sprintf("claim Lost: its volume %s no longer exists", nonEmpty(c.Spec.VolumeName, "(unnamed)")), "", 0)
		case corev1.ClaimPending:
			if a.now.Sub(c.CreationTimestamp.Time) < a.opts.StuckAfter {
				continue
			}
			class := defaultClass
			if c.Spec.StorageClassName != nil {
				class = *c.Spec.StorageClassName
			}
			since := c.CreationTimestamp.UTC().Format(time.RFC3339)
			if pod, ok := usedBy[c.Namespace+"/"+c.Name]; ok {
				a.add(CheckPVCs, api.SeverityHigh, c.Namespace, o, ReasonPVCPending, "",
					fmt.Sprintf("Pending since %s (class %q); pod %s waits for it", since, class, pod), "", 0)
				continue
			}
			if !classesKnown {
				continue // cannot tell WaitForFirstConsumer from stuck
			}
			sc := classes[class]
			switch {
			case class != "" && sc == nil:
				a.add(CheckPVCs, api.SeverityMedium, c.Namespace, o, ReasonPVCPending, "",
					fmt.Sprintf("Pending since %s: storage class %q does not exist", since, class), "", 0)
			case sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer:
			case class == "" && c.Spec.VolumeName == "" && c.Spec.Selector == nil:
				a.add(CheckPVCs, api.SeverityMedium, c.Namespace, o, ReasonPVCPending, "",
					fmt.Sprintf("Pending since %s: no storage class and no default class", since), "", 0)
			default:
				a.add(CheckPVCs, api.SeverityMedium, c.Namespace, o, ReasonPVCPending, "",
					fmt.Sprintf("Pending since %s (class %q binds immediately): not provisioned", since, class), "", 0)
			}
		}
	}
}

// serviceIndex maps ns/name to the listed Services.
func (a *analysis) serviceIndex() map[string]*service {
	svcs := make(map[string]*service, len(a.s.services))
	for i := range a.s.services {
		svcs[a.s.services[i].ns+"/"+a.s.services[i].name] = &a.s.services[i]
	}
	return svcs
}

// checkIngresses: every Service backend of an Ingress must exist and
// expose the port it names.
func (a *analysis) checkIngresses() {
	if !a.s.listed[listIngresses] || !a.s.listed[listServices] {
		return
	}
	svcs := a.serviceIndex()
	for i := range a.s.ings {
		ing := &a.s.ings[i]
		var bad []string
		seen := map[string]bool{}
		check := func(where string, b *networkingv1.IngressBackend) {
			if b == nil || b.Service == nil {
				return
			}
			port := b.Service.Port.Name
			if port == "" {
				port = fmt.Sprint(b.Service.Port.Number)
			}
			k := b.Service.Name + ":" + port
			if seen[k] {
				return
			}
			seen[k] = true
			svc := svcs[ing.Namespace+"/"+b.Service.Name]
			if svc == nil {
				bad = append(bad, fmt.Sprintf("%s → service %s does not exist", where, b.Service.Name))
				return
			}
			for _, p := range svc.ports {
				if (b.Service.Port.Name != "" && p.name == b.Service.Port.Name) || (b.Service.Port.Name == "" && p.port == b.Service.Port.Number) {
					return
				}
			}
			bad = append(bad, fmt.Sprintf("%s → service %s has no port %s", where, b.Service.Name, port))
		}
		check("default backend", ing.Spec.DefaultBackend)
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				check(nonEmpty(r.Host, "*")+p.Path, &p.Backend)
			}
		}
		if len(bad) > 0 {
			a.add(CheckIngresses, api.SeverityHigh, ing.Namespace, owner{"Ingress", ing.Name}, ReasonIngressBackend, "", strings.Join(bad, "; "), "", 0)
		}
	}
}

// checkWebhooks: an admission webhook served by an in-cluster Service
// that does not exist or has no ready pod. failurePolicy Fail (the v1
// default) rejects every matching API request meanwhile.
func (a *analysis) checkWebhooks() {
	if !a.s.listed[listServices] || !a.s.listed[listPods] {
		return
	}
	svcs := a.serviceIndex()
	check := func(kind, cfg, hook string, ref *admissionv1.ServiceReference, policy *admissionv1.FailurePolicyType) {
		if ref == nil {
			return
		}
		fail := policy == nil || *policy == admissionv1.Fail
		base, what := api.SeverityMedium, "failurePolicy Ignore: requests pass unchecked"
		if fail {
			base, what = api.SeverityHigh, "failurePolicy Fail: matching API requests are rejected"
		}
		svc := svcs[ref.Namespace+"/"+ref.Name]
		var why string
		switch {
		case svc == nil:
			why = "does not exist"
		case len(svc.sel) == 0:
			return // endpoints managed by hand: not judged from pods
		default:
			if sp := a.selected(svc); sp.ready {
				return
			} else if sp.n == 0 {
				why = "selects no pod"
			} else {
				why = fmt.Sprintf("has %d pod(s), none ready", sp.n)
			}
		}
		a.add(CheckWebhooks, base, "", owner{kind, cfg}, ReasonWebhookNoEndpoints, "",
			fmt.Sprintf("webhook %s → service %s/%s %s (%s)", hook, ref.Namespace, ref.Name, why, what), "", 0)
	}
	for i := range a.s.vhooks {
		c := &a.s.vhooks[i]
		for _, w := range c.Webhooks {
			check("ValidatingWebhookConfiguration", c.Name, w.Name, w.ClientConfig.Service, w.FailurePolicy)
		}
	}
	for i := range a.s.mhooks {
		c := &a.s.mhooks[i]
		for _, w := range c.Webhooks {
			check("MutatingWebhookConfiguration", c.Name, w.Name, w.ClientConfig.Service, w.FailurePolicy)
		}
	}
}

// checkHPAs: an HPA that cannot scale (AbleToScale or ScalingActive
// False, except ScalingDisabled on purpose), or that sits at maxReplicas
// while its target is unhealthy or its metrics are above target.
func (a *analysis) checkHPAs() {
	for i := range a.s.hpas {
		h := &a.s.hpas[i]
		o := owner{"HorizontalPodAutoscaler", h.Name}
		target := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
		var cannot []string
		for _, c := range h.Status.Conditions {
			if c.Status != corev1.ConditionFalse {
				continue
			}
			if c.Type == autoscalingv2.AbleToScale || (c.Type == autoscalingv2.ScalingActive && c.Reason != "ScalingDisabled") {
				cannot = append(cannot, fmt.Sprintf("%s=False (%s): %s", c.Type, c.Reason, c.Message))
			}
		}
		if len(cannot) > 0 {
			a.add(CheckHPAs, api.SeverityMedium, h.Namespace, o, ReasonHPACannotScale, "",
				"cannot scale "+target+": "+strings.Join(cannot, "; "), "", 0)
			continue
		}
		if h.Spec.MaxReplicas <= 0 || h.Status.CurrentReplicas < h.Spec.MaxReplicas {
			continue
		}
		tk := wkey(h.Namespace, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		var why []string
		if gs := a.byOwner[tk]; len(gs) > 0 {
			why = append(why, "target "+gs[0].Reason)
		} else if av := a.avail[hashKey(tk)]; a.exists[hashKey(tk)] && av[0] < av[1] {
			why = append(why, fmt.Sprintf("target available %d/%d", av[0], av[1]))
		}
		why = append(why, metricsAbove(h)...)
		if len(why) > 0 {
			a.add(CheckHPAs, api.SeverityMedium, h.Namespace, o, ReasonHPAAtMax, "",
				fmt.Sprintf("at maxReplicas %d for %s while unhealthy: %s", h.Spec.MaxReplicas, target, strings.Join(why, "; ")), "", 0)
		}
	}
}

// metricsAbove lists resource metrics whose current average utilization
// is above the HPA's target.
func metricsAbove(h *autoscalingv2.HorizontalPodAutoscaler) []string {
	var out []string
	for _, m := range h.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil || m.Resource.Target.AverageUtilization == nil {
			continue
		}
		for _, cur := range h.Status.CurrentMetrics {
			if cur.Type == autoscalingv2.ResourceMetricSourceType && cur.Resource != nil && cur.Resource.Name == m.Resource.Name &&
				cur.Resource.Current.AverageUtilization != nil && *cur.Resource.Current.AverageUtilization > *m.Resource.Target.AverageUtilization {
				out = append(out, fmt.Sprintf("%s %d%% > target %d%%", m.Resource.Name, *cur.Resource.Current.AverageUtilization, *m.Resource.Target.AverageUtilization))
			}
		}
	}
	return out
}

// checkPDBs: a PDB that allows no disruption because pods are unhealthy
// (not one that is merely strict while every pod is healthy): node drains
// and evictions block until they recover.
func (a *analysis) checkPDBs() {
	for i := range a.s.pdbs {
		p := &a.s.pdbs[i]
		st := p.Status
		if st.DisruptionsAllowed > 0 || st.ExpectedPods == 0 || st.CurrentHealthy >= st.DesiredHealthy {
			continue
		}
		a.add(CheckPDBs, api.SeverityMedium, p.Namespace, owner{"PodDisruptionBudget", p.Name}, ReasonPDBBlocking, "",
			fmt.Sprintf("allows no disruption: %d of %d pods healthy, needs %d; drains and evictions block", st.CurrentHealthy, st.ExpectedPods, st.DesiredHealthy), "", 0)
	}
}

package kube

// How a sweep reads the cluster in bounded memory (docs/MANUAL.md "Memory and
// cluster size"): every List is paged and each page is reduced to what the
// checks read before the next is asked for. The small lists come first,
// all at once, each reduced to the fields its checks read; the pods then
// fold, page by page, into the owners' problems, the Services' endpoints
// and the claims they wait for; the Warning events last, into the
// problems' evidence and the churn. What a sweep keeps grows with the
// problems and the number of owners, not with the pods or the events.
import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

var keySeed = maphash.MakeSeed()

// keyHash stands for a ns/Kind/name key in the sets a sweep keeps per
// listed object (64 bits: a collision among a cluster's objects is
// vanishingly unlikely, and would only move one event into the churn).
func keyHash(ns, kind, name string) uint64 { // == hashKey(wkey(ns, kind, name))
	var h maphash.Hash
	h.SetSeed(keySeed)
	_, _ = h.WriteString(ns)
	_ = h.WriteByte('/')
	_, _ = h.WriteString(kind)
	_ = h.WriteByte('/')
	_, _ = h.WriteString(name)
	return h.Sum64()
}

// hashKey is keyHash of a wkey.
func hashKey(k string) uint64 { return maphash.String(keySeed, k) }

// keySet holds ns/Kind/name keys by their hash.
type keySet map[uint64]struct{}

func (s keySet) add(ns, kind, name string)      { s[keyHash(ns, kind, name)] = struct{}{} }
func (s keySet) has(ns, kind, name string) bool { _, ok := s[keyHash(ns, kind, name)]; return ok }

// svcPods is what the live pods a Service selects add up to.
type svcPods struct {
	sel    labels.Selector
	n      int
	ready  bool
	owners map[owner]bool // of the selected pods, while none is ready
	// tmpl: the listed workloads whose pod template the selector matches,
	// kept while no live pod is selected (only then are they read).
	tmpl []tmplOwner
}

// tmplOwner is a workload a Service's selector matches by its template.
type tmplOwner struct {
	o       owner
	desired int32
}

// sweep runs the three phases of one sweep into a (its snapshot a.s).
// The pods' and the events' first pages are asked for at once and wait
// for their phase.
func (c *Client) sweep(ctx context.Context, a *analysis, timeout time.Duration) {
	s, ns := a.s, a.opts.Namespace
	var mu sync.Mutex
	podsGate, eventsGate := make(chan struct{}), make(chan struct{})
	small := c.smallListers(s, ns)
	core := c.cs.CoreV1()
	pods := map[string]lister{listPods: listEach(metav1.ListOptions{}, core.Pods(ns).List,
		func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta },
		func(page []corev1.Pod) {
			for i := range page {
				a.pod(&page[i])
			}
		})}
	warn := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("type", corev1.EventTypeWarning).String()}
	events := map[string]lister{listEvents: listEach(warn, core.Events(ns).List,
		func(l *corev1.EventList) []corev1.Event {
			// the field selector did this on a real server; kept for any that ignore it
			out := l.Items[:0]
			for _, e := range l.Items {
				if e.Type == corev1.EventTypeWarning {
					out = append(out, e)
				}
			}
			return out
		}, func(l *corev1.EventList) metav1.ListMeta { return l.ListMeta },
		func(page []corev1.Event) {
			for i := range page {
				a.event(&page[i])
			}
		})}
	first := c.runLists(ctx, s, &mu, small, timeout, nil)
	second := c.runLists(ctx, s, &mu, pods, timeout, podsGate)
	third := c.runLists(ctx, s, &mu, events, timeout, eventsGate)
	first.Wait()
	a.indexWorkloads()
	close(podsGate)
	second.Wait()
	a.checkRest()
	close(eventsGate)
	third.Wait()
}

// pod folds one listed pod into the analysis: its owner, its problem, the
// Services that select it, the claims it waits for, and (in the focus's
// namespace) the focus's evidence.
func (a *analysis) pod(p *corev1.Pod) {
	a.listedAt.add(p.Namespace, "Pod", p.Name)
	o := a.topOwner(p)
	a.podOwn[keyHash(p.Namespace, "Pod", p.Name)] = o
	if a.opts.Focus != nil && p.Namespace == a.opts.Focus.Namespace {
		a.focusPods = append(a.focusPods, focusPod{name: p.Name, ns: p.Namespace, statuses: p.Status.ContainerStatuses})
	}
	if !live(p) { // history (a controller replaced it; a failed Job is judged by the Job) or going away
		return
	}
	ready := podIsReady(p)
	for _, sp := range a.svcByNS[p.Namespace] {
		if !sp.sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		sp.n++
		sp.tmpl = nil
		switch {
		case ready:
			sp.ready, sp.owners = true, nil
		case !sp.ready:
			sp.owners[o] = true
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		k := p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		if !a.pendingClaims[k] {
			continue
		}
		if cur, ok := a.usedBy[k]; !ok || p.Name < cur {
			a.usedBy[k] = p.Name
		}
	}
	a.checkPod(p, o)
}

// focusPod is what the focus's evidence reads of a pod.
type focusPod struct {
	ns, name string
	statuses []corev1.ContainerStatus
}

func objMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
}

// smallListers are the first phase's lists, each reduced as it arrives.
func (c *Client) smallListers(s *snapshot, ns string) map[string]lister {
	cs, none := c.cs, metav1.ListOptions{}
	apps, core := cs.AppsV1(), cs.CoreV1()
	l := map[string]lister{
		listDeployments: listEach(none, apps.Deployments(ns).List,
			func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, func(l *appsv1.DeploymentList) metav1.ListMeta { return l.ListMeta },
			func(page []appsv1.Deployment) {
				for _, d := range page {
					s.deps = append(s.deps, newWorkload(d.ObjectMeta, "Deployment", d.Spec.Template.Labels, i32(d.Spec.Replicas, 1),
						d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Spec.Paused, d.Status.Conditions))
				}
			}),
		listStatefulSets: listEach(none, apps.StatefulSets(ns).List,
			func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, func(l *appsv1.StatefulSetList) metav1.ListMeta { return l.ListMeta },
			func(page []appsv1.StatefulSet) {
				for _, d := range page {
					s.sts = append(s.sts, newWorkload(d.ObjectMeta, "StatefulSet", d.Spec.Template.Labels, i32(d.Spec.Replicas, 1),
						d.Status.ReadyReplicas, d.Status.AvailableReplicas, false, nil))
				}
			}),
		listDaemonSets: listEach(none, apps.DaemonSets(ns).List,
			func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, func(l *appsv1.DaemonSetList) metav1.ListMeta { return l.ListMeta },
			func(page []appsv1.DaemonSet) {
				for _, d := range page {
					s.dss = append(s.dss, newWorkload(d.ObjectMeta, "DaemonSet", d.Spec.Template.Labels, d.Status.DesiredNumberScheduled,
						d.Status.NumberReady, d.Status.NumberAvailable, false, nil))
				}
			}),
		listReplicaSets: listEach(none, apps.ReplicaSets(ns).List,
			func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items }, func(l *appsv1.ReplicaSetList) metav1.ListMeta { return l.ListMeta },
			func(page []appsv1.ReplicaSet) {
				for i := range page {
					rs := &page[i]
					s.rsOwner[keyHash(rs.Namespace, "ReplicaSet", rs.Name)] = ownerOf(rs.OwnerReferences, "ReplicaSet", rs.Name)
				}
			}),
		listJobs: listEach(none, cs.BatchV1().Jobs(ns).List,
			func(l *batchv1.JobList) []batchv1.Job { return l.Items }, func(l *batchv1.JobList) metav1.ListMeta { return l.ListMeta },
			func(page []batchv1.Job) {
				for _, j := range page {
					m := objMeta(j.ObjectMeta)
					m.OwnerReferences = j.OwnerReferences
					s.jobs = append(s.jobs, batchv1.Job{ObjectMeta: m, Status: batchv1.JobStatus{Conditions: j.Status.Conditions}})
				}
			}),
		listCronJobs: listEach(none, cs.BatchV1().CronJobs(ns).List,
			func(l *batchv1.CronJobList) []batchv1.CronJob { return l.Items }, func(l *batchv1.CronJobList) metav1.ListMeta { return l.ListMeta },
			func(page []batchv1.CronJob) {
				for _, j := range page {
					s.cronJobs = append(s.cronJobs, [2]string{j.Namespace, j.Name})
				}
			}),
		listServices: listEach(none, core.Services(ns).List,
			func(l *corev1.ServiceList) []corev1.Service { return l.Items }, func(l *corev1.ServiceList) metav1.ListMeta { return l.ListMeta },
			func(page []corev1.Service) {
				for _, v := range page {
					ports := make([]svcPort, len(v.Spec.Ports))
					for i, p := range v.Spec.Ports {
						ports[i] = svcPort{p.Name, p.Port}
					}
					s.services = append(s.services, service{ns: v.Namespace, name: v.Name, sel: v.Spec.Selector,
						external: v.Spec.Type == corev1.ServiceTypeExternalName, ports: ports})
				}
			}),
		listPVCs: listEach(none, core.PersistentVolumeClaims(ns).List,
			func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items },
			func(l *corev1.PersistentVolumeClaimList) metav1.ListMeta { return l.ListMeta },
			func(page []corev1.PersistentVolumeClaim) {
				for _, v := range page {
					m := objMeta(v.ObjectMeta)
					m.CreationTimestamp = v.CreationTimestamp
					s.pvcs = append(s.pvcs, corev1.PersistentVolumeClaim{ObjectMeta: m, Status: corev1.PersistentVolumeClaimStatus{Phase: v.Status.Phase},
						Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: v.Spec.StorageClassName, VolumeName: v.Spec.VolumeName, Selector: v.Spec.Selector}})
				}
			}),
		listIngresses: listEach(none, cs.NetworkingV1().Ingresses(ns).List,
			func(l *networkingv1.IngressList) []networkingv1.Ingress { return l.Items }, func(l *networkingv1.IngressList) metav1.ListMeta { return l.ListMeta },
			func(page []networkingv1.Ingress) {
				for _, v := range page {
					s.ings = append(s.ings, networkingv1.Ingress{ObjectMeta: objMeta(v.ObjectMeta),
						Spec: networkingv1.IngressSpec{DefaultBackend: v.Spec.DefaultBackend, Rules: v.Spec.Rules}})
				}
			}),
		listHPAs: listEach(none, cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List,
			func(l *autoscalingv2.HorizontalPodAutoscalerList) []autoscalingv2.HorizontalPodAutoscaler {
				return l.Items
			},
			func(l *autoscalingv2.HorizontalPodAutoscalerList) metav1.ListMeta { return l.ListMeta },
			func(page []autoscalingv2.HorizontalPodAutoscaler) {
				for _, v := range page {
					s.hpas = append(s.hpas, autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta(v.ObjectMeta), Spec: v.Spec, Status: v.Status})
				}
			}),
		listPDBs: listEach(none, cs.PolicyV1().PodDisruptionBudgets(ns).List,
			func(l *policyv1.PodDisruptionBudgetList) []policyv1.PodDisruptionBudget { return l.Items },
			func(l *policyv1.PodDisruptionBudgetList) metav1.ListMeta { return l.ListMeta },
			func(page []policyv1.PodDisruptionBudget) {
				for _, v := range page {
					s.pdbs = append(s.pdbs, policyv1.PodDisruptionBudget{ObjectMeta: objMeta(v.ObjectMeta), Status: v.Status})
				}
			}),
	}
	if ns == "" {
		c.clusterListers(s, l)
	}
	return l
}

// clusterListers adds the cluster-scoped lists of an all-namespace sweep.
func (c *Client) clusterListers(s *snapshot, l map[string]lister) {
	cs, none := c.cs, metav1.ListOptions{}
	adm := cs.AdmissionregistrationV1()
	l[listNodes] = listEach(none, cs.CoreV1().Nodes().List,
		func(l *corev1.NodeList) []corev1.Node { return l.Items }, func(l *corev1.NodeList) metav1.ListMeta { return l.ListMeta },
		func(page []corev1.Node) {
			for _, n := range page { // images and the rest of the status are large and unread
				s.nodes = append(s.nodes, corev1.Node{ObjectMeta: objMeta(n.ObjectMeta), Status: corev1.NodeStatus{Conditions: n.Status.Conditions}})
			}
		})
	l[listStorageClasses] = listEach(none, cs.StorageV1().StorageClasses().List,
		func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items },
		func(l *storagev1.StorageClassList) metav1.ListMeta { return l.ListMeta },
		func(page []storagev1.StorageClass) {
			for _, v := range page {
				m := objMeta(v.ObjectMeta)
				if d := v.Annotations[defaultClassAnnotation]; d != "" {
					m.Annotations = map[string]string{defaultClassAnnotation: d}
				}
				s.classes = append(s.classes, storagev1.StorageClass{ObjectMeta: m, VolumeBindingMode: v.VolumeBindingMode})
			}
		})
	l[listValidatingHooks] = listEach(none, adm.ValidatingWebhookConfigurations().List,
		func(l *admissionv1.ValidatingWebhookConfigurationList) []admissionv1.ValidatingWebhookConfiguration {
			return l.Items
		},
		func(l *admissionv1.ValidatingWebhookConfigurationList) metav1.ListMeta { return l.ListMeta },
		func(page []admissionv1.ValidatingWebhookConfiguration) {
			for _, v := range page {
				hooks := make([]admissionv1.ValidatingWebhook, len(v.Webhooks))
				for i, w := range v.Webhooks { // the CA bundles are large and unread
					hooks[i] = admissionv1.ValidatingWebhook{Name: w.Name, FailurePolicy: w.FailurePolicy,
						ClientConfig: admissionv1.WebhookClientConfig{Service: w.ClientConfig.Service}}
				}
				s.vhooks = append(s.vhooks, admissionv1.ValidatingWebhookConfiguration{ObjectMeta: objMeta(v.ObjectMeta), Webhooks: hooks})
			}
		})
	l[listMutatingHooks] = listEach(none, adm.MutatingWebhookConfigurations().List,
		func(l *admissionv1.MutatingWebhookConfigurationList) []admissionv1.MutatingWebhookConfiguration {
			return l.Items
		},
		func(l *admissionv1.MutatingWebhookConfigurationList) metav1.ListMeta { return l.ListMeta },
		func(page []admissionv1.MutatingWebhookConfiguration) {
			for _, v := range page {
				hooks := make([]admissionv1.MutatingWebhook, len(v.Webhooks))
				for i, w := range v.Webhooks {
					hooks[i] = admissionv1.MutatingWebhook{Name: w.Name, FailurePolicy: w.FailurePolicy,
						ClientConfig: admissionv1.WebhookClientConfig{Service: w.ClientConfig.Service}}
				}
				s.mhooks = append(s.mhooks, admissionv1.MutatingWebhookConfiguration{ObjectMeta: objMeta(v.ObjectMeta), Webhooks: hooks})
			}
		})
}

const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func newWorkload(m metav1.ObjectMeta, kind string, tmpl map[string]string, desired, ready, avail int32, paused bool,
	conds []appsv1.DeploymentCondition) workload {
	if avail >= desired || paused { // the conditions are read only of a workload short of replicas
		conds = nil
	}
	return workload{ns: m.Namespace, kind: kind, name: m.Name, tmpl: tmpl, desired: desired, ready: ready, avail: avail, paused: paused,
		conds: conds, fleet: m.Labels[FleetLabel] == FleetValue || tmpl[FleetLabel] == FleetValue}
}

// ownerOf is an object's controller, or the object itself.
func ownerOf(refs []metav1.OwnerReference, kind, name string) owner {
	if ref := controllerRef(refs); ref != nil {
		return owner{internKind(ref.Kind), ref.Name}
	}
	return owner{kind, name}
}

// internKind shares one string for the kinds owners usually are (each
// decoded reference has its own copy otherwise).
func internKind(k string) string {
	for _, known := range []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Node"} {
		if k == known {
			return known
		}
	}
	return k
}

package kube

import (
	"context"
	"errors"
	"fmt"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lists a sweep reads. Each is one paged all-namespace List.
const (
	listPods             = "pods"
	listReplicaSets      = "replicasets"
	listDeployments      = "deployments"
	listStatefulSets     = "statefulsets"
	listDaemonSets       = "daemonsets"
	listJobs             = "jobs"
	listCronJobs         = "cronjobs"
	listNodes            = "nodes"
	listEvents           = "events"
	listServices         = "services"
	listPVCs             = "persistentvolumeclaims"
	listStorageClasses   = "storageclasses"
	listIngresses        = "ingresses"
	listHPAs             = "horizontalpodautoscalers"
	listPDBs             = "poddisruptionbudgets"
	listValidatingHooks  = "validatingwebhookconfigurations"
	listMutatingHooks    = "mutatingwebhookconfigurations"
	defaultListTimeout   = 20 * time.Second
	listTimeoutCauseText = "list did not finish within the sweep's list timeout"
)

// listOrder is the order lists are named in renders.
var listOrder = []string{listPods, listDeployments, listReplicaSets, listStatefulSets, listDaemonSets, listJobs, listCronJobs,
	listServices, listPVCs, listIngresses, listHPAs, listPDBs, listNodes, listStorageClasses, listValidatingHooks, listMutatingHooks, listEvents}

// clusterLists are read only by all-namespace sweeps.
var clusterLists = map[string]bool{listNodes: true, listStorageClasses: true, listValidatingHooks: true, listMutatingHooks: true}

// pageSize bounds one List response, and so the memory one list holds at
// a time: each page is reduced to what the checks read before the next is
// asked for (docs/MANUAL.md "Memory and cluster size"): a 20x cluster's pages
// then cost no more memory than a 1x one's (bench_test.go has the figures).
const pageSize = 500

// workload is what the checks read of a Deployment, StatefulSet or
// DaemonSet (reduced as its page arrives).
type workload struct {
	ns, kind, name        string
	fleet, paused         bool
	tmpl                  map[string]string // pod template labels (Service selectors), until indexWorkloads
	desired, ready, avail int32
	conds                 []appsv1.DeploymentCondition
}

// service is what the checks read of a Service: its selector (endpoints
// judged from pods), whether it is ExternalName, and its ports (Ingress
// backends).
type service struct {
	ns, name string
	sel      map[string]string
	external bool
	ports    []svcPort
}

type svcPort struct {
	name string
	port int32
}

// snapshot is what the first phase of a sweep keeps of the small lists,
// each item reduced as its page arrives; pods and Warning events are never
// kept (sweep.go folds them into the analysis page by page). errs holds
// each list that failed.
type snapshot struct {
	deps, sts, dss []workload       // after indexWorkloads: only those short of replicas
	rsOwner        map[uint64]owner // keyHash(ns, ReplicaSet, name) -> its controller
	jobs           []batchv1.Job
	cronJobs       [][2]string // namespace, name
	nodes          []corev1.Node
	services       []service
	pvcs           []corev1.PersistentVolumeClaim
	classes        []storagev1.StorageClass
	ings           []networkingv1.Ingress
	hpas           []autoscalingv2.HorizontalPodAutoscaler
	pdbs           []policyv1.PodDisruptionBudget
	vhooks         []admissionv1.ValidatingWebhookConfiguration
	mhooks         []admissionv1.MutatingWebhookConfiguration
	errs           map[string]error
	listed         map[string]bool
	counts         map[string]int // objects listed, per list
	pages          int            // List requests made
}

func newSnapshot() *snapshot {
	return &snapshot{rsOwner: map[uint64]owner{}, errs: map[string]error{}, listed: map[string]bool{}, counts: map[string]int{}}
}

func (s *snapshot) count(list string) int { return s.counts[list] }

var errListTimeout = errors.New(listTimeoutCauseText)

// pager is how one list is read: its budget, and the gate a page waits
// for before it is handed on (the pods wait for the owners, the events
// for every check: sweep.go).
type pager struct {
	timeout time.Duration
	gate    <-chan struct{} // nil: not gated
	pages   *int
	n       *int // items handed on
}

// pageEach lists every page of one resource and hands each page to each
// before asking for the next, so a list holds one page at a time. The
// first page is asked for at once; when gated, it is handed on once the
// gate opens, and the list's budget starts again then. A continue token
// that expired (410 Gone) restarts the list and skips what was handed on
// (pages come in key order), so nothing is seen twice. API
// priority-and-fairness 429s are retried by client-go after Retry-After.
func pageEach[L any, T any](ctx context.Context, p pager, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (L, error),
	items func(L) []T, meta func(L) metav1.ListMeta, each func([]T)) error {
	opts.Limit = pageSize
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	budget := func() context.Context {
		lctx, cancel := context.WithTimeoutCause(ctx, p.timeout, errListTimeout)
		cancels = append(cancels, cancel)
		return lctx
	}
	lctx := budget()
	gate, last, skipTo := p.gate, "", ""
	for {
		l, err := list(lctx, opts)
		*p.pages++
		if err != nil && opts.Continue != "" && apierrors.IsResourceExpired(err) {
			opts.Continue, skipTo = "", last
			continue
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(lctx), errListTimeout) && ctx.Err() == nil {
				err = fmt.Errorf("%w: timed out after %s", ErrClusterUnavailable, p.timeout)
			}
			return err
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			gate, lctx = nil, budget()
		}
		page := items(l)
		for skipTo != "" && len(page) > 0 && itemKey(&page[0]) <= skipTo {
			page = page[1:]
		}
		if len(page) > 0 {
			skipTo, last = "", itemKey(&page[len(page)-1])
			*p.n += len(page)
			each(page)
		}
		m := meta(l)
		if m.Continue == "" {
			return nil
		}
		opts.Continue = m.Continue
	}
}

// itemKey is an item's place in a list: the storage key's order.
func itemKey[T any](item *T) string {
	o, ok := any(item).(metav1.Object)
	if !ok {
		return ""
	}
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// lister runs one list of a sweep.
type lister func(ctx context.Context, p pager) error

// listEach builds a lister for one typed List call.
func listEach[L any, T any](opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (L, error),
	items func(L) []T, meta func(L) metav1.ListMeta, each func([]T)) lister {
	return func(ctx context.Context, p pager) error {
		return pageEach(ctx, p, opts, list, items, meta, each)
	}
}

// runLists runs listers concurrently, each bounded by timeout (gated ones
// wait for gate first), and records in s which answered.
func (c *Client) runLists(ctx context.Context, s *snapshot, mu *sync.Mutex, listers map[string]lister, timeout time.Duration, gate <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for name, run := range listers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages, n := 0, 0
			err := run(ctx, pager{timeout: timeout, gate: gate, pages: &pages, n: &n})
			mu.Lock()
			defer mu.Unlock()
			s.pages += pages
			s.counts[name] = n
			if err != nil {
				s.errs[name] = c.apiErr(err, "list "+name)
			} else {
				s.listed[name] = true
			}
		}()
	}
	return &wg
}

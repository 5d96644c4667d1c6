package kubetest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// loadMore creates the kinds beyond Deployments, ReplicaSets, pods and
// Jobs (before Jobs and pods, which may be owned by them): StorageClasses,
// StatefulSets, DaemonSets and CronJobs (UIDs recorded for owner
// references), Services, claims, Ingresses, HPAs, PDBs and validating
// webhook configurations, each status written through its subresource.
func loadMore(ctx context.Context, cs kubernetes.Interface, o *Objects, workers int,
	setUID func(from, to types.UID)) error {
	cr := metav1.CreateOptions{}
	up := metav1.UpdateOptions{}
	steps := []struct {
		n int
		f func(ctx context.Context, i int) error
	}{
		{len(o.StorageClasses), func(ctx context.Context, i int) error {
			x := o.StorageClasses[i].DeepCopy()
			x.UID = ""
			_, err := cs.StorageV1().StorageClasses().Create(ctx, x, cr)
			return named("storageclass", x.Name, err)
		}},
		{len(o.StatefulSets), func(ctx context.Context, i int) error {
			x := o.StatefulSets[i].DeepCopy()
			u := x.UID
			x.UID = ""
			got, err := cs.AppsV1().StatefulSets(x.Namespace).Create(ctx, x, cr)
			if err != nil {
				return named("statefulset", x.Name, err)
			}
			setUID(u, got.UID)
			got.Status = x.Status
			got.Status.ObservedGeneration = got.Generation
			_, err = cs.AppsV1().StatefulSets(x.Namespace).UpdateStatus(ctx, got, up)
			return named("statefulset status", x.Name, err)
		}},
		{len(o.DaemonSets), func(ctx context.Context, i int) error {
			x := o.DaemonSets[i].DeepCopy()
			u := x.UID
			x.UID = ""
			got, err := cs.AppsV1().DaemonSets(x.Namespace).Create(ctx, x, cr)
			if err != nil {
				return named("daemonset", x.Name, err)
			}
			setUID(u, got.UID)
			got.Status = x.Status
			got.Status.ObservedGeneration = got.Generation
			_, err = cs.AppsV1().DaemonSets(x.Namespace).UpdateStatus(ctx, got, up)
			return named("daemonset status", x.Name, err)
		}},
		{len(o.CronJobs), func(ctx context.Context, i int) error {
			x := o.CronJobs[i].DeepCopy()
			u := x.UID
			x.UID = ""
			got, err := cs.BatchV1().CronJobs(x.Namespace).Create(ctx, x, cr)
			if err == nil {
				setUID(u, got.UID)
			}
			return named("cronjob", x.Name, err)
		}},
		{len(o.Services), func(ctx context.Context, i int) error {
			x := o.Services[i].DeepCopy()
			x.UID = ""
			_, err := cs.CoreV1().Services(x.Namespace).Create(ctx, x, cr)
			return named("service", x.Name, err)
		}},
		{len(o.PVCs), func(ctx context.Context, i int) error {
			x := o.PVCs[i].DeepCopy()
			x.UID = ""
			got, err := cs.CoreV1().PersistentVolumeClaims(x.Namespace).Create(ctx, x, cr)
			if err != nil {
				return named("pvc", x.Name, err)
			}
			got.Status = x.Status
			_, err = cs.CoreV1().PersistentVolumeClaims(x.Namespace).UpdateStatus(ctx, got, up)
			return named("pvc status", x.Name, err)
		}},
		{len(o.Ingresses), func(ctx context.Context, i int) error {
			x := o.Ingresses[i].DeepCopy()
			x.UID = ""
			_, err := cs.NetworkingV1().Ingresses(x.Namespace).Create(ctx, x, cr)
			return named("ingress", x.Name, err)
		}},
		{len(o.HPAs), func(ctx context.Context, i int) error {
			x := o.HPAs[i].DeepCopy()
			x.UID = ""
			got, err := cs.AutoscalingV2().HorizontalPodAutoscalers(x.Namespace).Create(ctx, x, cr)
			if err != nil {
				return named("hpa", x.Name, err)
			}
			got.Status = x.Status
			_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(x.Namespace).UpdateStatus(ctx, got, up)
			return named("hpa status", x.Name, err)
		}},
		{len(o.PDBs), func(ctx context.Context, i int) error {
			x := o.PDBs[i].DeepCopy()
			x.UID = ""
			got, err := cs.PolicyV1().PodDisruptionBudgets(x.Namespace).Create(ctx, x, cr)
			if err != nil {
				return named("pdb", x.Name, err)
			}
			got.Status = x.Status
			got.Status.ObservedGeneration = got.Generation
			_, err = cs.PolicyV1().PodDisruptionBudgets(x.Namespace).UpdateStatus(ctx, got, up)
			return named("pdb status", x.Name, err)
		}},
		{len(o.Webhooks), func(ctx context.Context, i int) error {
			x := o.Webhooks[i].DeepCopy()
			x.UID = ""
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, x, cr)
			return named("validatingwebhookconfiguration", x.Name, err)
		}},
	}
	for _, st := range steps {
		if err := parallel(ctx, workers, st.n, st.f); err != nil {
			return err
		}
	}
	return nil
}

func named(what, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", what, name, err)
}

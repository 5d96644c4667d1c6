package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

var (
	configMapsGVR  = corev1.SchemeGroupVersion.WithResource("configmaps")
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// TestRestartPrecondition: an autonomous restart (the annotation and the
// evictions alike) is made only when the cluster, read right before the
// write, shows the pods predate a write to a ConfigMap they reference;
// otherwise it is refused, naming what the cluster shows, and nothing is
// written. What a finding or an alert says is not an input at all.
func TestRestartPrecondition(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mode   string
		cm     *time.Time // web-config's creation; nil: no such ConfigMap
		secret bool       // the pods also reference Secret web-token
		ctx    context.Context
		acted  bool
		want   []string
	}{
		{"written after the pods: annotation", "annotation", at(-time.Hour), false, context.Background(), true,
			[]string{"restarted Deployment shop/web", "Evidence, read from the cluster right before the write: ConfigMap web-config written 2026-07-28T08:14:02Z, after the pods started 2026-07-28T07:14:02Z"}},
		{"written after the pods: evictions", "evict", at(-time.Hour), false, context.Background(), true,
			[]string{"by evicting its 2 pods", "Evidence, read from the cluster right before the write: ConfigMap web-config"}},
		{"written before the pods", "annotation", at(-5 * time.Hour), false, context.Background(), false,
			[]string{ErrPrecondition.Error(), "no configuration written since the pods started 2026-07-28T07:14:02Z (ConfigMap web-config last written 2026-07-28T04:14:02Z)", "nothing was changed"}},
		{"written before the pods: evictions", "evict", at(-5 * time.Hour), false, context.Background(), false,
			[]string{ErrPrecondition.Error(), "no configuration written since the pods started"}},
		{"ConfigMap missing", "annotation", nil, false, context.Background(), false,
			[]string{ErrPrecondition.Error(), "ConfigMap web-config not found"}},
		{"a Secret is never evidence", "annotation", nil, true, context.Background(), false,
			[]string{ErrPrecondition.Error(), "Secret web-token not checked (Secrets are never read)"}},
		{"a person's interactive restart is theirs", "annotation", at(-5 * time.Hour), false, interactive(), true,
			[]string{"restarted Deployment shop/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ec := newEvictionCluster(t, nil, tc.mode)
			setConfigMap(t, ec, tc.cm, tc.secret)
			out, err := c.Rollout(tc.ctx, RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: fixtureNS, Name: "web"})
			text := out
			if err != nil {
				text = err.Error()
			}
			if tc.acted != (err == nil) || (!tc.acted && !errors.Is(err, ErrPrecondition)) {
				t.Fatalf("acted = %v, want %v: %s", err == nil, tc.acted, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("answer lacks %q:\n%s", w, text)
				}
			}
			ec.mu.Lock()
			evicted := len(ec.evicted)
			ec.mu.Unlock()
			written := evicted > 0 || getDeploy(t, c, fixtureNS, "web").Spec.Template.Annotations[RestartAnnotation] != ""
			if written != tc.acted {
				t.Errorf("written = %v, want %v (evictions %d)", written, tc.acted, evicted)
			}
		})
	}
}

func at(d time.Duration) *time.Time { t := testNow.Add(d); return &t }

// setConfigMap replaces web-config (created at created; nil: none) and
// adds a Secret reference to the pods when secret is set.
func setConfigMap(t *testing.T, ec *evictionCluster, created *time.Time, secret bool) {
	t.Helper()
	tr := ec.cs.Tracker()
	if err := tr.Delete(configMapsGVR, fixtureNS, "web-config"); err != nil {
		t.Fatal(err)
	}
	if created != nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: fixtureNS, CreationTimestamp: metav1.NewTime(*created)}}
		if err := tr.Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	if !secret {
		return
	}
	for _, name := range []string{"web-1-old", "web-1-older"} {
		o, err := tr.Get(podsGVR, fixtureNS, name)
		if err != nil {
			t.Fatal(err)
		}
		p := o.(*corev1.Pod)
		p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-token"}}}}
		if err := tr.Update(podsGVR, p, fixtureNS); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartIsConditional: the restart's patch carries the
// resourceVersion its check read, and the API server's 409 for a change
// in between is a refusal that says so (the real API server's answer is
// proven by TestIntegrationRestartPrecondition).
func TestRestartIsConditional(t *testing.T) {
	t.Parallel()
	for _, conflict := range []bool{false, true} {
		c, ec := newEvictionCluster(t, nil, "annotation")
		var body string
		ec.cs.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			body = string(a.(k8stesting.PatchAction).GetPatch())
			if conflict {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("the object has been modified"))
			}
			return false, nil, nil
		})
		d := getDeploy(t, c, fixtureNS, "web")
		d.ResourceVersion = "7"
		if err := ec.cs.Tracker().Update(deploymentsGVR, d, fixtureNS); err != nil {
			t.Fatal(err)
		}
		rv := getDeploy(t, c, fixtureNS, "web").ResourceVersion
		_, err := c.Rollout(context.Background(), RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: fixtureNS, Name: "web"})
		if !strings.Contains(body, `"resourceVersion":"`+rv+`"`) || rv == "" {
			t.Errorf("patch %s does not carry resourceVersion %q", body, rv)
		}
		if conflict != errors.Is(err, ErrPrecondition) || (conflict && !strings.Contains(err.Error(), "changed after it was checked")) {
			t.Errorf("conflict %v: err = %v", conflict, err)
		}
	}
}

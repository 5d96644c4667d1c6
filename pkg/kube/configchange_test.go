package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// cmMeta is a ConfigMap's metadata as the API server stores it: created
// at created, then each write a managedFields entry (manager, time, the
// fields it owns).
func cmMeta(name string, created time.Time, writes ...metav1.ManagedFieldsEntry) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: name, Namespace: fixtureNS, CreationTimestamp: metav1.NewTime(created), ManagedFields: writes}
}

func write(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

const (
	dataFields  = `{"f:data":{".":{},"f:DB_POOL":{},"f:LOG_LEVEL":{}}}`
	annotFields = `{"f:metadata":{"f:annotations":{".":{},"f:argocd.argoproj.io/tracking-id":{}}}}`
	binFields   = `{"f:binaryData":{".":{},"f:cert.der":{}}}`
)

func TestConfigEvidence(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	before, after := started.Add(-10*time.Minute), started.Add(3*time.Minute)
	tests := []struct {
		name      string
		cms, secs []string
		got       map[string]configObject
		want      string // evidence's ConfigMap ("" = none)
		note      []string
	}{
		{name: "config written before the pods started: no evidence", cms: []string{"api-config"},
			got:  map[string]configObject{"api-config": {meta: cmMeta("api-config", before.Add(-time.Hour), write("kubectl", before, dataFields))}},
			note: []string{"no configuration written since the pods started 2026-07-28T09:00:00Z", "api-config last written 2026-07-28T08:50:00Z"}},
		{name: "data written after the pods started: evidence", cms: []string{"api-config"},
			got:  map[string]configObject{"api-config": {meta: cmMeta("api-config", before, write("kubectl-edit", after, dataFields))}},
			want: "api-config", note: []string{"ConfigMap api-config written 2026-07-28T09:03:00Z, after the pods started 2026-07-28T09:00:00Z"}},
		{name: "binaryData written after: evidence", cms: []string{"certs"},
			got:  map[string]configObject{"certs": {meta: cmMeta("certs", before, write("cert-manager", after, binFields))}},
			want: "certs"},
		{name: "created after the pods started (no managedFields): evidence", cms: []string{"api-config"},
			got:  map[string]configObject{"api-config": {meta: cmMeta("api-config", after)}},
			want: "api-config"},
		{name: "only an annotation written after: no evidence", cms: []string{"api-config"},
			got: map[string]configObject{"api-config": {meta: cmMeta("api-config", before,
				write("kubectl", before, dataFields), write("argocd-controller", after, annotFields))}},
			note: []string{"no configuration written since"}},
		{name: "written in the same second the pods started: no evidence", cms: []string{"api-config"},
			got: map[string]configObject{"api-config": {meta: cmMeta("api-config", started)}}},
		{name: "gone ConfigMap: no evidence, said", cms: []string{"api-config"},
			got: map[string]configObject{"api-config": {why: "not found"}}, note: []string{"ConfigMap api-config not found"}},
		{name: "unreadable ConfigMap: no evidence, said", cms: []string{"api-config"},
			got:  map[string]configObject{"api-config": {why: "not read: forbidden: configmaps \"api-config\" is forbidden"}},
			note: []string{"ConfigMap api-config not read: forbidden"}},
		{name: "no references: no evidence, no note"},
		{name: "a Secret is named, never read", secs: []string{"app-credentials"},
			note: []string{"Secret app-credentials not checked (Secrets are never read)"}},
		{name: "the newest of two writes after the start wins", cms: []string{"a", "b", "c"},
			got: map[string]configObject{
				"a": {meta: cmMeta("a", before, write("m", after, dataFields))},
				"b": {meta: cmMeta("b", before, write("m", after.Add(time.Minute), dataFields))},
				"c": {meta: cmMeta("c", before)},
			}, want: "b"},
		{name: "one gone, one changed after: evidence from the one there", cms: []string{"gone", "live"},
			got:  map[string]configObject{"gone": {why: "not found"}, "live": {meta: cmMeta("live", before, write("m", after, dataFields))}},
			want: "live", note: []string{"ConfigMap gone not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, note := configEvidence(started, tc.cms, tc.secs, tc.got)
			got := ""
			if ev != nil {
				got = ev.Name
				if ev.Kind != "ConfigMap" || !ev.PodsStartedAt.Equal(started) || !ev.After() {
					t.Errorf("evidence %+v: want kind ConfigMap, pods_started_at %s, after", ev, started)
				}
			}
			if got != tc.want {
				t.Errorf("evidence = %q, want %q (note %q)", got, tc.want, note)
			}
			if len(tc.cms)+len(tc.secs) == 0 && note != "" {
				t.Errorf("note = %q, want none without references", note)
			}
			for _, n := range tc.note {
				if !strings.Contains(note, n) {
					t.Errorf("note = %q, want it to contain %q", note, n)
				}
			}
		})
	}
}

func TestConfigRefs(t *testing.T) {
	t.Parallel()
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-cfg"}}}}}},
		Containers: []corev1.Container{{Name: "app",
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-config"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-secrets"}}},
			},
			Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				{Name: "FLAG", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "f"}}},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app-credentials"}, Key: "t"}}},
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "AGAIN", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api-config"}, Key: "g"}}},
			}}},
		Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nginx-conf"}}}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle-key"}}},
			}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	cms, secs := configRefs(spec)
	if got, want := strings.Join(cms, ","), "api-config,bundle,flags,init-cfg,nginx-conf"; got != want {
		t.Errorf("ConfigMaps = %s, want %s", got, want)
	}
	if got, want := strings.Join(secs, ","), "api-secrets,app-credentials,bundle-key,tls"; got != want {
		t.Errorf("Secrets = %s, want %s", got, want)
	}
}

// crashloopWith is the broken fixtures with the crash loop's pod
// referencing api-config (envFrom) and app-credentials (a Secret), and
// the ConfigMap itself when cm is not nil.
func crashloopWith(t *testing.T, cm *corev1.ConfigMap) (*Client, []k8stesting.Action, *ProblemReport) {
	t.Helper()
	c, cs := brokenClient(t, objs(cm)...)
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(fixtureNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !strings.HasPrefix(p.Name, "crashloop-") {
			continue
		}
		ctr := &p.Spec.Containers[0]
		ctr.EnvFrom = append(ctr.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-config"}}})
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-credentials"}, Key: "api-token"}}})
		if _, err := cs.CoreV1().Pods(fixtureNS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cs.ClearActions()
	rep, err := c.ClusterProblems(ctx, ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, cs.Actions(), rep
}

func objs(cm *corev1.ConfigMap) []runtime.Object {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-credentials", Namespace: fixtureNS}, Data: map[string][]byte{"api-token": []byte("ghp_x")}}
	if cm == nil {
		return []runtime.Object{sec}
	}
	return []runtime.Object{sec, cm}
}

// TestClusterProblemsConfigChange: the sweep reads the referenced
// ConfigMap (and never the Secret), and the evidence reaches the problem,
// its rendered line and its finding.
func TestClusterProblemsConfigChange(t *testing.T) {
	t.Parallel()
	// the fixture's pods started 20h before testNow
	podsStarted := testNow.Add(-20 * time.Hour)
	cm := func(written time.Time) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: *cmMeta("api-config", podsStarted.Add(-48*time.Hour), write("kubectl-edit", written, dataFields)),
			Data: map[string]string{"DB_POOL": "0"}}
	}
	tests := []struct {
		name     string
		cm       *corev1.ConfigMap
		evidence bool
		note     string
	}{
		{"changed after the pods started", cm(testNow.Add(-5 * time.Minute)), true, "ConfigMap api-config written 2026-07-28T09:09:02Z, after the pods started 2026-07-27T13:14:02Z"},
		{"changed before the pods started", cm(podsStarted.Add(-time.Hour)), false, "no configuration written since the pods started"},
		{"ConfigMap gone", nil, false, "ConfigMap api-config not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, actions, rep := crashloopWith(t, tc.cm)
			p := findProblem(rep, fixtureNS, "Deployment", "crashloop", ReasonCrashLoopBackOff)
			if p == nil {
				t.Fatalf("no crash loop problem:\n%s", rep.Render())
			}
			if (p.ConfigChange != nil) != tc.evidence {
				t.Errorf("ConfigChange = %+v, want evidence %v", p.ConfigChange, tc.evidence)
			}
			for _, want := range []string{tc.note, "Secret app-credentials not checked"} {
				if !strings.Contains(p.ConfigNote, want) {
					t.Errorf("note = %q, want %q", p.ConfigNote, want)
				}
			}
			out := rep.Render()
			if got := strings.Contains(out, " config-changed=ConfigMap/api-config"); got != tc.evidence {
				t.Errorf("render has config-changed = %v, want %v:\n%s", got, tc.evidence, out)
			}
			if !strings.Contains(out, "| config: ") {
				t.Errorf("render lacks the config note:\n%s", out)
			}
			var found bool
			for _, f := range ProblemsToFindings(rep) {
				if f.Name == "crashloop" && f.Reason == ReasonCrashLoopBackOff {
					found = true
					if f.ConfigChange.After() != tc.evidence || !strings.Contains(f.Detail, "config: ") {
						t.Errorf("finding config_change = %+v, detail %q; want evidence %v", f.ConfigChange, f.Detail, tc.evidence)
					}
				}
			}
			if !found {
				t.Error("no crash loop finding")
			}
			var reads []string
			for _, a := range actions {
				if a.GetResource().Resource == "secrets" {
					t.Errorf("the sweep touched a Secret: %s %v", a.GetVerb(), a)
				}
				if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "configmaps" {
					reads = append(reads, g.GetName())
				}
			}
			if strings.Join(reads, ",") != "api-config" {
				t.Errorf("ConfigMap reads = %v, want exactly api-config once", reads)
			}
		})
	}
}

// A workload that references nothing gets no note and no read.
func TestClusterProblemsNoConfigRefs(t *testing.T) {
	t.Parallel()
	c, cs := brokenClient(t)
	rep, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := findProblem(rep, fixtureNS, "Deployment", "crashloop", ReasonCrashLoopBackOff)
	if p == nil || p.ConfigChange != nil || p.ConfigNote != "" {
		t.Fatalf("crash loop without references: %+v", p)
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "configmaps" {
			t.Errorf("read a ConfigMap nobody references: %v", a)
		}
	}
}

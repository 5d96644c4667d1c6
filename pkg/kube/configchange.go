package kube

// The config-change evidence of a crash loop: did the workload's running
// pods start before the configuration they reference was last written?
// Only ConfigMaps are read, and only their metadata is used; Secrets are
// never read (the agents' RBAC has no Secrets, manifests/base/rbac.yaml),
// so a referenced Secret is named as not checked (docs/MANUAL.md,
// "cluster_problems").
import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// maxConfigReads bounds the ConfigMap reads of one sweep: a cluster with
// hundreds of crash loops gets evidence for the first ones (by report
// order, most severe first) and a note for the rest.
const maxConfigReads = 40

// configRefs are the ConfigMaps and Secrets a pod spec references by
// name — envFrom, env valueFrom, volumes and projected volumes, of every
// container and init container — each sorted and once.
func configRefs(spec *corev1.PodSpec) (configMaps, secrets []string) {
	cm, sec := map[string]bool{}, map[string]bool{}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					cm[ef.ConfigMapRef.Name] = true
				}
				if ef.SecretRef != nil {
					sec[ef.SecretRef.Name] = true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					cm[r.Name] = true
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					sec[r.Name] = true
				}
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			cm[v.ConfigMap.Name] = true
		}
		if v.Secret != nil {
			sec[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					cm[s.ConfigMap.Name] = true
				}
				if s.Secret != nil {
					sec[s.Secret.Name] = true
				}
			}
		}
	}
	delete(cm, "")
	delete(sec, "")
	return sortedKeys(cm), sortedKeys(sec)
}

// lastDataWrite is when a ConfigMap's data was last written: the newest
// managedFields entry whose fields own data or binaryData (a label or
// annotation write by another manager is not a configuration change),
// else its creation.
func lastDataWrite(m metav1.ObjectMeta) time.Time {
	at := m.CreationTimestamp.Time
	for _, mf := range m.ManagedFields {
		if mf.Time == nil || mf.FieldsV1 == nil || !ownsData(mf.FieldsV1.GetRawBytes()) {
			continue
		}
		if mf.Time.After(at) {
			at = mf.Time.Time
		}
	}
	return at
}

// ownsData reports whether a managedFields entry's field set holds the
// top-level data or binaryData field.
func ownsData(raw []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return false
	}
	_, d := top["f:data"]
	_, b := top["f:binaryData"]
	return d || b
}

// configObject is what a sweep read of one referenced ConfigMap: its
// metadata, or why there is none.
type configObject struct {
	meta *metav1.ObjectMeta // nil: not found or not read
	why  string             // "not found", or the read's error
}

// configEvidence is the rule, a pure function: evidence when a referenced
// ConfigMap was written after podsStarted (the newest affected pod's
// start); the newest write wins. note says in one line what was checked
// ("" when the pods reference no configuration).
func configEvidence(podsStarted time.Time, configMaps, secrets []string, got map[string]configObject) (*api.ConfigChange, string) {
	var ev *api.ConfigChange
	var newest time.Time
	var newestName string
	var unread []string
	for _, name := range configMaps {
		o := got[name]
		if o.meta == nil {
			unread = append(unread, fmt.Sprintf("ConfigMap %s %s", name, nonEmpty(o.why, "not read")))
			continue
		}
		at := lastDataWrite(*o.meta)
		if at.After(newest) {
			newest, newestName = at, name
		}
		if cc := (&api.ConfigChange{Kind: "ConfigMap", Name: name, ChangedAt: at, PodsStartedAt: podsStarted}); cc.After() &&
			(ev == nil || at.After(ev.ChangedAt)) {
			ev = cc
		}
	}
	var parts []string
	switch {
	case ev != nil:
		parts = append(parts, fmt.Sprintf("ConfigMap %s written %s, after the pods started %s", ev.Name, stamp(ev.ChangedAt), stamp(podsStarted)))
	case newestName != "":
		parts = append(parts, fmt.Sprintf("no configuration written since the pods started %s (ConfigMap %s last written %s)",
			stamp(podsStarted), newestName, stamp(newest)))
	}
	parts = append(parts, unread...)
	if len(secrets) > 0 {
		parts = append(parts, "Secret "+strings.Join(secrets, ", ")+" not checked (Secrets are never read)")
	}
	return ev, strings.Join(parts, "; ")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// podStart is when a pod started (its creation when no start is recorded).
func podStart(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// notePod records a crash-looping pod on its problem: the newest start,
// and the spec whose references are checked (the first pod's).
func (g *Problem) notePod(p *corev1.Pod) {
	if s := podStart(p); s.After(g.podsStarted) {
		g.podsStarted = s
	}
	if g.podSpec == nil { // a copy: a pointer into the pod would hold its whole listed page
		spec := corev1.PodSpec{InitContainers: p.Spec.InitContainers, Containers: p.Spec.Containers, Volumes: p.Spec.Volumes}
		g.podSpec = &spec
	}
}

// attachConfigEvidence reads the ConfigMaps each crash loop of a workload
// references (metadata only; each once, at most maxConfigReads a sweep,
// each read bounded by timeout) and sets ConfigChange and ConfigNote.
func (c *Client) attachConfigEvidence(ctx context.Context, ps []Problem, timeout time.Duration) {
	read := map[string]configObject{} // ns/name
	for i := range ps {
		p := &ps[i]
		if p.Reason != ReasonCrashLoopBackOff || !workloadKinds[p.Kind] || p.podSpec == nil {
			continue
		}
		cms, secs := configRefs(p.podSpec)
		got := map[string]configObject{}
		for _, name := range cms {
			k := p.Namespace + "/" + name
			o, ok := read[k]
			if !ok {
				if len(read) >= maxConfigReads {
					o = configObject{why: fmt.Sprintf("not read (over the sweep's %d ConfigMap reads)", maxConfigReads)}
				} else {
					o = c.configMeta(ctx, p.Namespace, name, timeout)
					read[k] = o
				}
			}
			got[name] = o
		}
		p.ConfigChange, p.ConfigNote = configEvidence(p.podsStarted, cms, secs, got)
	}
}

// configMeta gets one ConfigMap and keeps its metadata only.
func (c *Client) configMeta(ctx context.Context, ns, name string, timeout time.Duration) configObject {
	gctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cm, err := c.cs.CoreV1().ConfigMaps(ns).Get(gctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return configObject{why: "not found"}
	case err != nil:
		return configObject{why: "not read: " + c.apiErr(err, "get configmap "+ns+"/"+name).Error()}
	}
	m := cm.ObjectMeta
	return configObject{meta: &m}
}

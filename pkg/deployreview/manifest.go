package deployreview

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The manifest rules (KM001–KM009) walk yaml.v3 nodes, so every finding
// names the line of the field it is about.

// object is one manifest document.
type object struct {
	file       string
	kind, name string
	namespace  string
	root       *yaml.Node // the document's mapping
}

type manifestFile struct{ objects []object }

func parseManifests(file string, raw []byte) (manifestFile, error) {
	docs, err := decodeDocs(raw)
	return manifestsOf(file, docs), err
}

// decodeDocs is every YAML document of raw (its top nodes), up to the
// first that does not parse.
func decodeDocs(raw []byte) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if len(doc.Content) > 0 {
			docs = append(docs, doc.Content[0])
		}
	}
}

// manifestsOf is the objects (mappings with a kind) among docs.
func manifestsOf(file string, docs []*yaml.Node) manifestFile {
	var m manifestFile
	for _, root := range docs {
		if root.Kind != yaml.MappingNode {
			continue
		}
		o := object{file: file, root: root, kind: scalar(get(root, "kind"))}
		if md := get(root, "metadata"); md != nil {
			o.name, o.namespace = scalar(get(md, "name")), scalar(get(md, "namespace"))
		}
		if o.kind != "" {
			m.objects = append(m.objects, o)
		}
	}
	return m
}

// get is a mapping's value for key (nil when absent or not a mapping).
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// dig follows keys through nested mappings.
func dig(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = get(n, k)
	}
	return n
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// keyLine is the line of key in mapping n (the mapping's own line when absent).
func keyLine(n *yaml.Node, key string) int {
	if n == nil {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// podTemplate is a workload's pod spec and whether it runs for good (a
// Deployment, StatefulSet or DaemonSet, which probes and PDBs are for).
func podSpec(o object) (spec *yaml.Node, longRunning bool) {
	switch o.kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		return dig(o.root, "spec", "template", "spec"), true
	case "Job":
		return dig(o.root, "spec", "template", "spec"), false
	case "CronJob":
		return dig(o.root, "spec", "jobTemplate", "spec", "template", "spec"), false
	case "Pod":
		return get(o.root, "spec"), false
	}
	return nil, false
}

// checkManifests runs KM001–KM009 over every object of every file (the
// PDB rule needs the whole set).
func checkManifests(files []manifestFile) []Finding {
	var all []object
	for _, f := range files {
		all = append(all, f.objects...)
	}
	var out []Finding
	for _, o := range all {
		spec, long := podSpec(o)
		if spec == nil {
			continue
		}
		add := func(id string, line int, msg string) {
			f := finding(id, o.file, line, msg)
			f.Kind, f.Object = o.kind, strings.TrimPrefix(o.namespace+"/"+o.name, "/")
			out = append(out, f)
		}
		podNonRoot := scalar(dig(spec, "securityContext", "runAsNonRoot")) == "true"
		podUser := dig(spec, "securityContext", "runAsUser")
		for _, list := range []string{"initContainers", "containers"} {
			ctrs := get(spec, list)
			if ctrs == nil || ctrs.Kind != yaml.SequenceNode {
				continue
			}
			for _, c := range ctrs.Content {
				checkContainer(c, long && list == "containers", podNonRoot, podUser, add)
			}
		}
		if vols := get(spec, "volumes"); vols != nil && vols.Kind == yaml.SequenceNode {
			for _, v := range vols.Content {
				if hp := get(v, "hostPath"); hp != nil {
					add("KM007", keyLine(v, "hostPath"), fmt.Sprintf("volume %s mounts hostPath %s", scalar(get(v, "name")), scalar(get(hp, "path"))))
				}
			}
		}
		checkReplicas(o, all, add)
	}
	return out
}

// checkContainer runs the per-container rules.
func checkContainer(c *yaml.Node, long, podNonRoot bool, podUser *yaml.Node, add func(id string, line int, msg string)) {
	name := scalar(get(c, "name"))
	at := keyLine(c, "name")
	if img := get(c, "image"); img != nil && !pinned(img.Value) && !strings.Contains(img.Value, "$") {
		add("KM001", img.Line, fmt.Sprintf("container %s deploys %s", name, img.Value))
	}
	res := get(c, "resources")
	switch {
	case get(res, "requests") == nil:
		add("KM002", keyLine(c, "resources"), fmt.Sprintf("container %s has no resource requests", name))
	case dig(res, "limits", "memory") == nil:
		add("KM002", keyLine(c, "resources"), fmt.Sprintf("container %s has no memory limit", name))
	}
	if long && get(c, "readinessProbe") == nil {
		add("KM003", at, fmt.Sprintf("container %s has no readinessProbe", name))
	}
	if long && get(c, "livenessProbe") == nil {
		add("KM004", at, fmt.Sprintf("container %s has no livenessProbe", name))
	}
	sc := get(c, "securityContext")
	if p := get(sc, "privileged"); scalar(p) == "true" {
		add("KM005", p.Line, fmt.Sprintf("container %s is privileged", name))
	} else if p := get(sc, "allowPrivilegeEscalation"); scalar(p) == "true" {
		add("KM005", p.Line, fmt.Sprintf("container %s allows privilege escalation", name))
	}
	user := get(sc, "runAsUser")
	if user == nil {
		user = podUser
	}
	switch {
	case scalar(user) == "0":
		add("KM006", user.Line, fmt.Sprintf("container %s runs as UID 0", name))
	case scalar(get(sc, "runAsNonRoot")) != "true" && !podNonRoot && user == nil:
		add("KM006", at, fmt.Sprintf("container %s sets neither runAsNonRoot nor runAsUser", name))
	}
}

// checkReplicas: KM008 (no PDB for a multi-replica workload) and KM009
// (a maxUnavailable that allows a full outage).
func checkReplicas(o object, all []object, add func(id string, line int, msg string)) {
	if o.kind != "Deployment" && o.kind != "StatefulSet" {
		return
	}
	rn := dig(o.root, "spec", "replicas")
	replicas := 1
	if rn != nil {
		replicas, _ = strconv.Atoi(rn.Value)
	}
	if replicas > 1 && !hasPDB(o, all) {
		add("KM008", rn.Line, fmt.Sprintf("%s %s runs %d replicas and no PodDisruptionBudget selects its pods", o.kind, o.name, replicas))
	}
	mu := dig(o.root, "spec", "strategy", "rollingUpdate", "maxUnavailable")
	if mu == nil {
		return
	}
	v := strings.TrimSpace(mu.Value)
	all100 := v == "100%"
	if n, err := strconv.Atoi(v); err == nil && n >= replicas {
		all100 = true
	}
	if all100 {
		add("KM009", mu.Line, fmt.Sprintf("maxUnavailable %s with %d replicas lets a rollout stop every pod", v, replicas))
	}
}

// hasPDB: a PodDisruptionBudget in the same namespace whose matchLabels
// are all among the workload's pod labels.
func hasPDB(o object, all []object) bool {
	labels := podLabels(o)
	for _, p := range all {
		if p.kind == "PodDisruptionBudget" && p.namespace == o.namespace && selects(dig(p.root, "spec", "selector", "matchLabels"), labels) {
			return true
		}
	}
	return false
}

// podLabels are a workload's pod template labels.
func podLabels(o object) map[string]string {
	labels := map[string]string{}
	if l := dig(o.root, "spec", "template", "metadata", "labels"); l != nil {
		for i := 0; i+1 < len(l.Content); i += 2 {
			labels[l.Content[i].Value] = l.Content[i+1].Value
		}
	}
	return labels
}

// selects: a non-empty label selector mapping whose every pair is in labels.
func selects(sel *yaml.Node, labels map[string]string) bool {
	if sel == nil || sel.Kind != yaml.MappingNode || len(sel.Content) == 0 {
		return false
	}
	for i := 0; i+1 < len(sel.Content); i += 2 {
		if v, ok := labels[sel.Content[i].Value]; !ok || v != sel.Content[i+1].Value {
			return false
		}
	}
	return true
}

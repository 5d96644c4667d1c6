package route

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
)

// Correlation keys (docs/MANUAL.md, "Storms"): the alerts that share one are one
// incident and one investigation.
const (
	// KeyNode: a node-level alert (NodeAlertnames) with a node label is
	// its node's incident, across namespaces.
	KeyNode = "node"
	// KeyOwner: an alert on a pod is its owner's incident (the Deployment
	// behind its ReplicaSet), whatever Alertmanager group it came in.
	KeyOwner = "owner"
	// KeyGroup: the Alertmanager group (groupKey) and the namespace.
	KeyGroup = "group"
	// KeyAlert: every alert its own incident (the fingerprint).
	KeyAlert = "alert"
)

// KeyKinds lists the keys a routes file may name, in the default order.
var KeyKinds = []string{KeyNode, KeyOwner, KeyGroup, KeyAlert}

// DefaultNodeAlertnames are kube-prometheus's node-level alerts.
var DefaultNodeAlertnames = []string{
	"KubeNodeNotReady", "KubeNodeUnreachable", "KubeletDown", "KubeNodeReadinessFlapping",
	"NodeNotReady", "NodeDown", "NodeFilesystemAlmostOutOfSpace", "NodeFilesystemSpaceFillingUp",
}

// Correlation is the routes file's correlation section.
type Correlation struct {
	// Keys are tried in order; the first that applies to an alert is its
	// incident. KeyGroup and KeyAlert always apply.
	Keys []string
	// NodeAlertnames are the node-level alerts KeyNode applies to.
	NodeAlertnames []string
	// MaxListed bounds the alerts an investigation's context lists; the
	// rest are counted.
	MaxListed int
}

// DefaultCorrelation is what applies when the routes file sets none.
func DefaultCorrelation() Correlation {
	return Correlation{Keys: []string{KeyNode, KeyOwner, KeyGroup}, NodeAlertnames: slices.Clone(DefaultNodeAlertnames), MaxListed: 20}
}

// Key returns an alert's correlation key: readable, bounded, the same for
// every alert of one incident. nodeDown reports nodes known to be lost (a
// node-level alert fires for them): a pod alert carrying such a node label
// joins its node's incident when KeyNode is on.
func (c Correlation) Key(groupKey, fingerprint string, labels map[string]string, nodeDown func(node string) bool) string {
	for _, k := range c.Keys {
		switch k {
		case KeyNode:
			if n := labels["node"]; n != "" && (c.NodeLevel(labels["alertname"]) || (nodeDown != nil && nodeDown(n))) {
				return "node/" + bound(n)
			}
		case KeyOwner:
			if kind, name := Owner(labels); name != "" {
				return bound(labels["namespace"]) + "/" + kind + "/" + bound(name)
			}
		case KeyGroup:
			return bound(labels["namespace"]) + "/group/" + short(groupKey)
		case KeyAlert:
			return "alert/" + fingerprint
		}
	}
	return "alert/" + fingerprint
}

// NodeLevel reports whether alertname is a node-level alert.
func (c Correlation) NodeLevel(alertname string) bool {
	return slices.Contains(c.NodeAlertnames, alertname)
}

// Uses reports whether key kind k is on.
func (c Correlation) Uses(k string) bool { return slices.Contains(c.Keys, k) }

// podHash is a Deployment pod's name: <deployment>-<pod-template-hash>-<suffix>,
// both from Kubernetes' safe alphabet (no vowels, no 0, 1, 3).
var (
	podOfDeployment  = regexp.MustCompile(`^(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	replicaSetSuffix = regexp.MustCompile(`^(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}$`)
)

// safeSuffix reports whether s ends in n characters of the pod-name
// alphabet above: a cheap necessary condition for either pattern, so the
// regexps run only on names that may match (most do not, and Owner runs
// for every alert).
func safeSuffix(s string, n int) bool {
	if len(s) < n+2 {
		return false
	}
	for i := len(s) - n; i < len(s); i++ {
		if !strings.ContainsRune(podAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

const podAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// Owner names the workload behind an alert: owner_kind/owner_name labels
// (a ReplicaSet's named as its Deployment), then deployment, statefulset,
// daemonset and replicaset labels, then a Deployment pod's name with the
// ReplicaSet hash and pod suffix stripped. "" when none is known.
func Owner(labels map[string]string) (kind, name string) {
	if k, n := labels["owner_kind"], labels["owner_name"]; k != "" && n != "" {
		if k == "ReplicaSet" && safeSuffix(n, 6) {
			if m := replicaSetSuffix.FindStringSubmatch(n); m != nil {
				return "Deployment", m[1]
			}
		}
		return k, n
	}
	for _, o := range []struct{ label, kind string }{{"deployment", "Deployment"}, {"statefulset", "StatefulSet"}, {"daemonset", "DaemonSet"}} {
		if n := labels[o.label]; n != "" {
			return o.kind, n
		}
	}
	if rs := labels["replicaset"]; safeSuffix(rs, 6) {
		if m := replicaSetSuffix.FindStringSubmatch(rs); m != nil {
			return "Deployment", m[1]
		}
	}
	if pod := labels["pod"]; safeSuffix(pod, 5) && pod[len(pod)-6] == '-' {
		if m := podOfDeployment.FindStringSubmatch(pod); m != nil {
			return "Deployment", m[1]
		}
	}
	return "", ""
}

// bound keeps a key part readable and short (labels may be 4 KiB).
func bound(s string) string {
	if len(s) <= 80 && !strings.Contains(s, "/") {
		return s
	}
	return short(s)
}

func short(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

package route

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCorrelationKey(t *testing.T) {
	t.Parallel()
	def := DefaultCorrelation()
	lost := func(n string) bool { return n == "node-7" }
	tests := []struct {
		name   string
		c      Correlation
		group  string
		labels map[string]string
		want   string
	}{
		{"pod of a deployment: its owner", def, "{}:{pod=\"api-7d9f8b6c5d-x2x4z\"}",
			map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "api-7d9f8b6c5d-x2x4z"}, "shop/Deployment/api"},
		{"another pod of it, another group: the same", def, "{}:{pod=\"api-7d9f8b6c5d-q9wbk\"}",
			map[string]string{"alertname": "KubePodNotReady", "namespace": "shop", "pod": "api-7d9f8b6c5d-q9wbk"}, "shop/Deployment/api"},
		{"owner labels win, a ReplicaSet is its Deployment", def, "g",
			map[string]string{"namespace": "shop", "pod": "web-0", "owner_kind": "ReplicaSet", "owner_name": "cart-66b8c9d7f4"}, "shop/Deployment/cart"},
		{"statefulset label", def, "g", map[string]string{"namespace": "db", "pod": "pg-0", "statefulset": "pg"}, "db/StatefulSet/pg"},
		{"replicaset label", def, "g", map[string]string{"namespace": "db", "replicaset": "pgbouncer-5f6d7c8b9d"}, "db/Deployment/pgbouncer"},
		{"a bare pod has no owner: the group and namespace", def, "{}:{alertname=\"X\"}",
			map[string]string{"alertname": "X", "namespace": "shop", "pod": "debug"}, "shop/group/" + short("{}:{alertname=\"X\"}")},
		{"node-level alert: the node, whatever the namespace", def, "g1",
			map[string]string{"alertname": "KubeNodeNotReady", "namespace": "monitoring", "node": "node-7"}, "node/node-7"},
		{"pod alert on a lost node: the node", def, "g2",
			map[string]string{"alertname": "KubePodNotReady", "namespace": "shop", "node": "node-7", "pod": "api-7d9f8b6c5d-x2x4z"}, "node/node-7"},
		{"pod alert on a healthy node: its owner", def, "g2",
			map[string]string{"alertname": "KubePodNotReady", "namespace": "shop", "node": "node-2", "pod": "api-7d9f8b6c5d-x2x4z"}, "shop/Deployment/api"},
		{"keys: alert", Correlation{Keys: []string{KeyAlert}}, "g",
			map[string]string{"alertname": "KubeNodeNotReady", "node": "node-7"}, "alert/fp1"},
		{"owner off: the group", Correlation{Keys: []string{KeyNode, KeyGroup}, NodeAlertnames: DefaultNodeAlertnames}, "g",
			map[string]string{"namespace": "shop", "pod": "api-7d9f8b6c5d-x2x4z"}, "shop/group/" + short("g")},
		{"no key applies: the alert", Correlation{Keys: []string{KeyOwner}}, "g",
			map[string]string{"namespace": "shop", "pod": "debug"}, "alert/fp1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.c.Key(tt.group, "fp1", tt.labels, lost); got != tt.want {
				t.Fatalf("Key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCorrelationFromFile(t *testing.T) {
	t.Parallel()
	rs, err := Parse("r.yaml", []byte("correlation:\n  keys: [owner, alert]\n  node_alertnames: [NodeGone]\n  max_listed: 5\nqueue:\n  max_per_agent: 40\n"), opts())
	if err != nil {
		t.Fatal(err)
	}
	c := rs.Correlation
	if got := fmt.Sprint(c.Keys, c.NodeAlertnames, c.MaxListed, rs.QueueMax); got != "[owner alert] [NodeGone] 5 40" {
		t.Fatalf("parsed %s", got)
	}
	def, err := Parse("r.yaml", []byte("routes: []\n"), opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(def.Correlation.Keys, def.Correlation.MaxListed, def.QueueMax); got != "[node owner group] 20 500" {
		t.Fatalf("defaults %s", got)
	}
}

// TestOwnerPrefilterAgreesWithTheRegexps: the cheap suffix check before the
// pod-name regexps never changes what Owner finds.
func TestOwnerPrefilterAgreesWithTheRegexps(t *testing.T) {
	t.Parallel()
	names := []string{"", "api-00001", "a-bcdfgh-bcdfg", "-bcdfgh-bcdfg", "api-7d9f8b6c5d-x2x4z", "api-7d9f8b6c5d-x2x4a",
		"x-bcdfghjklm-zzzzz", "x-bcdfghjklmn-zzzzz", "cart-66b8c9d7f4", "cart-66b8c", "c-bcdfgh", "-bcdfgh", "pg-0"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab2z-"
	for range 20000 {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	viaRegexp := func(labels map[string]string) (string, string) {
		if k, n := labels["owner_kind"], labels["owner_name"]; k != "" && n != "" {
			if m := replicaSetSuffix.FindStringSubmatch(n); k == "ReplicaSet" && m != nil {
				return "Deployment", m[1]
			}
			return k, n
		}
		if m := replicaSetSuffix.FindStringSubmatch(labels["replicaset"]); m != nil {
			return "Deployment", m[1]
		}
		if m := podOfDeployment.FindStringSubmatch(labels["pod"]); m != nil {
			return "Deployment", m[1]
		}
		return "", ""
	}
	for _, n := range names {
		for _, labels := range []map[string]string{{"pod": n}, {"replicaset": n}, {"owner_kind": "ReplicaSet", "owner_name": n}} {
			gk, gn := Owner(labels)
			wk, wn := viaRegexp(labels)
			if gk != wk || gn != wn {
				t.Fatalf("Owner(%q) = %q %q, the regexps say %q %q", labels, gk, gn, wk, wn)
			}
		}
	}
}

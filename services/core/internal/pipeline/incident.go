package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// members are an incident's alerts as an investigation's context lists
// them: at most maxListed, the rest counted.
type members struct {
	listed []string
	total  int
}

func (m *members) add(line string, maxListed int) {
	m.total++
	if len(m.listed) < maxListed {
		m.listed = append(m.listed, line)
	}
}

func (m *members) merge(o members, maxListed int) {
	for _, l := range o.listed {
		m.add(l, maxListed)
	}
	m.total += o.total - len(o.listed)
}

// memberLine names one alert in an incident's list: its alertname and
// what it is about (namespace/pod, the node, the instance), tab-separated.
func memberLine(a webhook.Alert) string {
	what := ""
	switch l := a.Labels; {
	case l["pod"] != "":
		what = l["namespace"] + "/" + l["pod"]
	case l["node"] != "":
		what = "node " + l["node"]
	case l["instance"] != "":
		what = l["instance"]
	default:
		what = l["namespace"]
	}
	return safetext.Clean(a.Alertname(), 60) + "\t" + safetext.Clean(what, 80)
}

// incident is one correlation key's part of a webhook.
type incident struct {
	key     string
	cluster string // "" for the default cluster
	kind    string // route.Key*: what made the key
	target  route.Target
	firing  int
	inc     members
	sev     int
}

// incidents keys every alert of m (index → incident; nil for a malformed
// alert, one whose problems[i] is not ""). Node-level alerts are read
// first, so a pod alert of a lost node in the same webhook joins the
// node's incident.
func (p *Pipeline) incidents(ctx context.Context, m webhook.Message, problems []string) []*incident {
	c := p.o.Routes.Correlation
	now := p.o.Now()
	if c.Uses(route.KeyNode) {
		for i, a := range m.Alerts {
			if problems[i] == "" && a.Status == "firing" && a.Labels["node"] != "" && c.NodeLevel(a.Alertname()) {
				cluster, _ := p.o.Clusters.Of(a.Labels)
				if mk := Agent(cluster, a.Labels["node"]); p.nodes.mark(mk, now) {
					p.announceNode(ctx, mk, now)
				}
			}
		}
	}
	// down asks whether a node of downFor's cluster is lost; made again
	// only when the cluster changes between alerts (one per webhook, as a
	// rule).
	var down func(string) bool
	downFor := ""
	out := make([]*incident, len(m.Alerts))
	byKey := map[string]*incident{}
	for i, a := range m.Alerts {
		if problems[i] != "" {
			continue
		}
		t := p.o.Routes.Match(a.Labels)
		cluster, known := p.o.Clusters.Of(a.Labels)
		if !known && !t.Ignored {
			t.Ignored, t.Reason = true, fmt.Sprintf("cluster %q has no agents (AGENT_PEERS lists %s/slug=url entries for clusters %s; DEFAULT_CLUSTER is %q)",
				cluster, "cluster", strings.Join(p.o.Clusters.Others, ", "), p.o.Clusters.Default)
		}
		t.Agent = Agent(cluster, t.Agent)
		if down == nil || cluster != downFor {
			downFor = cluster
			down = func(n string) bool { return p.nodes.down(Agent(cluster, n), now, p.o.Routes.Default.Cooldown) }
		}
		key := "alert/" + a.Fingerprint
		if !t.Ignored { // an ignored alert never joins a real incident
			key = c.Key(m.GroupKey, a.Fingerprint, a.Labels, down)
		}
		kind := keyKind(key)
		if cluster != "" {
			key = cluster + "/" + key
		}
		inc, ok := byKey[key]
		if !ok {
			inc = &incident{key: key, kind: kind, target: t, cluster: cluster}
			byKey[key] = inc
		}
		if a.Status == "firing" {
			inc.firing++
			inc.inc.add(memberLine(a), c.MaxListed)
			inc.sev = max(inc.sev, severityRank(a.Labels["severity"]))
		}
		out[i] = inc
	}
	return out
}

func keyKind(key string) string {
	switch {
	case strings.HasPrefix(key, "alert/"):
		return route.KeyAlert
	case strings.HasPrefix(key, "node/"):
		return route.KeyNode
	case strings.Contains(key, "/group/"):
		return route.KeyGroup
	}
	return route.KeyOwner
}

// incidentHash is what "changed" means for a standing incident: the
// alert's whole content when it is its own incident; for a shared key the
// alertname and severity (each pod's annotations differ, the incident
// does not).
func incidentHash(a webhook.Alert, kind string) string {
	if kind == route.KeyAlert {
		return a.ContentHash()
	}
	h := sha256.Sum256([]byte(a.Alertname() + "\x00" + a.Labels["severity"]))
	return hex.EncodeToString(h[:12])
}

// incidentContext is context.incident: the key, how many alerts, and the
// listed ones by alertname, under MaxAlertContext characters (fewer are
// listed when they do not fit; "more" counts the rest).
func incidentContext(key string, m members) string {
	type doc struct {
		Key    string              `json:"key"`
		Alerts int                 `json:"alerts"`
		Listed map[string][]string `json:"listed"`
		More   int                 `json:"more,omitempty"`
	}
	for n := len(m.listed); ; n-- {
		d := doc{Key: key, Alerts: m.total, Listed: map[string][]string{}, More: m.total - n}
		for _, l := range m.listed[:n] {
			name, what, _ := strings.Cut(l, "\t")
			d.Listed[name] = append(d.Listed[name], what)
		}
		b, _ := json.Marshal(d)
		if len([]rune(string(b))) <= MaxAlertContext || n == 0 {
			return string(b)
		}
	}
}

// maxMembers bounds the fingerprints remembered per running incident
// (past it, a repeat is recorded joined again, never lost); maxRunning the
// running incidents remembered (another replica's whose end was not heard
// are forgotten oldest first).
const (
	maxMembers = 4096
	maxRunning = 4096
)

// run is one incident's running investigation and the alerts part of it.
type run struct {
	inv   string
	fps   map[string]struct{}
	since time.Time
}

// running remembers, per incident whose investigation runs, which alerts
// are part of it: a repeat is deduped, a new one joins. It holds this
// process's investigations and, from their notes (store.PeerNote), the
// other replicas'; each is known by its id, so a note heard late never
// lends one investigation's members to the next.
type running struct {
	mu sync.Mutex
	m  map[string]*run // key → its investigation
}

// add records fp as part of investigation inv of key (a new inv replaces
// the key's previous one).
func (r *running) add(key, inv, fp string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*run{}
	}
	s := r.m[key]
	if s == nil || s.inv != inv {
		if s == nil && len(r.m) >= maxRunning {
			r.evictLocked()
		}
		s = &run{inv: inv, fps: map[string]struct{}{}, since: now}
		r.m[key] = s
	}
	if len(s.fps) < maxMembers {
		s.fps[fp] = struct{}{}
	}
}

func (r *running) evictLocked() {
	oldest := ""
	for k, s := range r.m {
		if oldest == "" || s.since.Before(r.m[oldest].since) {
			oldest = k
		}
	}
	delete(r.m, oldest)
}

// joins reports whether fp would join investigation inv of key: it is
// known here (this process started it, or heard another replica did) and
// fp is not part of it yet. One not heard of yet is unknown: its alerts
// are deduped.
func (r *running) joins(key, inv, fp string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[key]
	if !ok || s.inv != inv {
		return false
	}
	_, in := s.fps[fp]
	return !in
}

// members is how many alerts of key's investigation inv are known here.
func (r *running) members(key, inv string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.m[key]; ok && s.inv == inv {
		return len(s.fps)
	}
	return 0
}

// end forgets investigation inv of key.
func (r *running) end(key, inv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.m[key]; ok && s.inv == inv {
		delete(r.m, key)
	}
}

// maxNodes bounds the lost nodes remembered. A node is marked by its
// cluster and name, qualified as Agent qualifies a slug: two clusters may
// both have a node ip-10-0-1-5 (node names hold no "/").
const maxNodes = 1024

// nodes remembers nodes a node-level alert fired for, here or on another
// replica, so pod alerts on them join the node's incident for a cooldown.
type nodes struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// mark records node lost at (a later mark wins) and reports whether the
// other replicas should hear of it: a node not marked, or marked more
// than announceEvery before.
func (n *nodes) mark(node string, at time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]time.Time{}
	}
	prev, ok := n.m[node]
	if !ok && len(n.m) >= maxNodes {
		oldest := ""
		for k, t := range n.m {
			if oldest == "" || t.Before(n.m[oldest]) {
				oldest = k
			}
		}
		delete(n.m, oldest)
	}
	if !ok || at.After(prev) {
		n.m[node] = at
	}
	return !ok || at.Sub(prev) >= announceEvery
}

// announceEvery: a node-level alert that keeps firing renews its mark on
// the other replicas at most this often.
const announceEvery = time.Minute

func (n *nodes) down(node string, now time.Time, within time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.m[node]
	return ok && now.Sub(t) < within
}

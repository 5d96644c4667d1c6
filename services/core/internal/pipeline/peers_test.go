package pipeline

import (
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
)

// TestHeard: notes of another replica make its investigations' members
// and its lost nodes this process's; each investigation is known by its
// id, so a late note of an ended one lends nothing to the next.
func TestHeard(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	const key = "shop/Deployment/api"
	type probe struct {
		inv, fp string
		joins   bool
	}
	for _, c := range []struct {
		name   string
		notes  []store.PeerNote
		probes []probe
	}{
		{"nothing heard: deduped as before", nil, []probe{{"i1", "pod-2", false}}},
		{"a dispatch heard: a new alert joins, the member does not",
			[]store.PeerNote{{Key: key, Alert: "pod-1", Investigation: "i1"}},
			[]probe{{"i1", "pod-2", true}, {"i1", "pod-1", false}, {"i2", "pod-2", false}}},
		{"a join heard: its alert is a member",
			[]store.PeerNote{{Key: key, Alert: "pod-1", Investigation: "i1"}, {Key: key, Alert: "pod-2", Investigation: "i1"}},
			[]probe{{"i1", "pod-2", false}, {"i1", "pod-3", true}}},
		{"the end heard: known no more",
			[]store.PeerNote{{Key: key, Alert: "pod-1", Investigation: "i1"}, {Key: key, Investigation: "i1", Ended: true}},
			[]probe{{"i1", "pod-2", false}}},
		{"a later investigation replaces the earlier one's members",
			[]store.PeerNote{{Key: key, Alert: "pod-1", Investigation: "i1"}, {Key: key, Alert: "pod-2", Investigation: "i2"}},
			[]probe{{"i2", "pod-1", true}, {"i1", "pod-3", false}}},
		{"the end of another investigation ends nothing",
			[]store.PeerNote{{Key: key, Alert: "pod-1", Investigation: "i2"}, {Key: key, Investigation: "i1", Ended: true}},
			[]probe{{"i2", "pod-3", true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := New(Options{Routes: &route.Routes{}, Now: func() time.Time { return now }})
			for _, n := range c.notes {
				p.Heard(n)
			}
			for _, pr := range c.probes {
				if got := p.running.joins(key, pr.inv, pr.fp); got != pr.joins {
					t.Errorf("%s of %s joins = %v, want %v", pr.fp, pr.inv, got, pr.joins)
				}
			}
		})
	}
}

// TestNodeMarks: a node marked here is announced when new and at most once
// a minute after; a mark heard from another replica counts here, and an
// older one never moves a mark back.
func TestNodeMarks(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	var n nodes
	for _, c := range []struct {
		at       time.Duration
		announce bool
	}{{0, true}, {30 * time.Second, false}, {90 * time.Second, true}, {100 * time.Second, false}} {
		if got := n.mark("node-7", t0.Add(c.at)); got != c.announce {
			t.Errorf("mark at +%s announces = %v, want %v", c.at, got, c.announce)
		}
	}
	n.mark("node-7", t0) // an older note
	if !n.down("node-7", t0.Add(100*time.Second+29*time.Minute), 30*time.Minute) {
		t.Error("an older mark moved node-7's back")
	}
	p := New(Options{Routes: &route.Routes{Default: route.Rule{Cooldown: 30 * time.Minute}}, Now: func() time.Time { return t0.Add(time.Minute) }})
	p.Heard(store.PeerNote{Node: "node-3", At: t0})
	if !p.NodeLost("", "node-3") || p.NodeLost("", "node-4") {
		t.Error("node-3 heard lost should be lost here, node-4 not")
	}
	p.Heard(store.PeerNote{Node: Agent("eu-west", "node-5"), At: t0})
	if !p.NodeLost("eu-west", "node-5") || p.NodeLost("us-east", "node-5") || p.NodeLost("", "node-5") {
		t.Error("node-5 heard lost in eu-west should be lost there only")
	}
}

package pipeline

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Several core replicas share one incident (docs/MANUAL.md, "Storms: one incident,
// one investigation"): each tells the others, through the store, which
// alerts are part of the investigations it runs (the store sends that with
// every dispatched or joined decision, and the end of each investigation)
// and which nodes it marked lost (announceNode). What a replica hears,
// Heard records as if it had decided it, so a new alert of another
// replica's investigation is joined and a pod alert on a node another
// replica marked lost joins the node's incident. Until a note arrives
// (milliseconds; never while the store does not listen) the replica
// decides as if alone: the new alert is deduped, the pod alert is keyed
// by its owner.

// Peers tells the other replicas (*store.Switch, *store.Postgres).
type Peers interface {
	AnnouncePeers(ctx context.Context, n store.PeerNote) error
}

// Heard records a note of another replica (store.Switch.HearPeers). It
// does not block.
func (p *Pipeline) Heard(n store.PeerNote) {
	switch {
	case n.Node != "":
		p.nodes.mark(n.Node, n.At)
	case n.Key == "" || n.Investigation == "":
	case n.Ended:
		p.running.end(n.Key, n.Investigation)
	case n.Alert != "":
		p.running.add(n.Key, n.Investigation, n.Alert, p.o.Now())
	}
}

// announceNode tells the other replicas node (Agent(cluster, node)) was marked
// lost at at. A
// failure is logged: they key its pods by owner meanwhile.
func (p *Pipeline) announceNode(ctx context.Context, node string, at time.Time) {
	if p.o.Peers == nil {
		return
	}
	if err := p.o.Peers.AnnouncePeers(ctx, store.PeerNote{Node: node, At: at}); err != nil {
		p.o.Log.Warn("could not tell the other replicas a node is lost", zap.String("node", node), zap.Error(err))
	}
}

// Members is how many alerts of investigation inv of incident key this
// process knows are part of it (0: none, or not known here).
func (p *Pipeline) Members(key, inv string) int { return p.running.members(key, inv) }

// NodeLost reports whether node of cluster ("" for the default one) is
// marked lost here (by a node-level alert this process decided, or another
// replica's note) within the cooldown.
func (p *Pipeline) NodeLost(cluster, node string) bool {
	return p.nodes.down(Agent(cluster, node), p.o.Now(), p.o.Routes.Default.Cooldown)
}

package store

// Core replicas tell each other about their incidents (docs/MANUAL.md, "Storms":
// one incident, one investigation): every dispatched or joined decision
// NOTIFYs peerChannel in its transaction with the incident's key, the
// alert and the investigation; a finished investigation says it ended; a
// replica that marks a node lost says so (AnnouncePeers). Each replica
// hears them on the connection it listens for alert-state writes on
// (postgres_listen.go) and hands them to HearPeers' function, so its
// incidents' members and lost nodes are the other replicas' too within
// milliseconds. A separate channel: a version that does not know it does
// not listen to it, and stateChannel's payload is unchanged.

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// peerChannel is the NOTIFY channel of PeerNotes; the payload is a
// peerWire in JSON.
const peerChannel = "kubecrew_incident"

// maxPeerPayload bounds a note's payload below Postgres' 8000 bytes: a
// longer one (a key of unusual labels) is not sent, and the other
// replicas decide that alert as if they had not heard yet.
const maxPeerPayload = 7000

// PeerNote is what one core replica tells the others.
type PeerNote struct {
	// Key is the incident (its correlation key); Alert an alert that is
	// part of Investigation, its running investigation.
	Key, Alert, Investigation string
	// Ended: Investigation finished (Alert is "").
	Ended bool
	// Node was marked lost At (Key, Alert and Investigation are "").
	Node string
	At   time.Time
}

// peerWire is a note on the wire. NOTIFY reaches every schema of the
// database: a note names its schema, and another schema's is ignored.
type peerWire struct {
	Replica       string    `json:"r"`
	Schema        string    `json:"s"`
	Key           string    `json:"k,omitempty"`
	Alert         string    `json:"a,omitempty"`
	Investigation string    `json:"i,omitempty"`
	Ended         bool      `json:"e,omitempty"`
	Node          string    `json:"n,omitempty"`
	At            time.Time `json:"t,omitzero"`
}

// peerHub holds the function notes are handed to; a Switch shares its hub
// with every Postgres it opens.
type peerHub struct {
	fn atomic.Pointer[func(PeerNote)]
}

func (h *peerHub) hear(fn func(PeerNote)) { h.fn.Store(&fn) }

func (h *peerHub) deliver(n PeerNote) {
	if fn := h.fn.Load(); fn != nil {
		(*fn)(n)
	}
}

// withPeers shares hub (a Switch's) with the Postgres opened.
func withPeers(hub *peerHub) Option { return func(o *options) { o.peers = hub } }

// HearPeers hands every note another replica sends to fn, on the listening
// connection's goroutine: fn must not block. Notes are heard while the
// store listens (DECISION_FLUSH_INTERVAL > 0, the default).
func (p *Postgres) HearPeers(fn func(PeerNote)) { p.peers.hear(fn) }

// AnnouncePeers sends n to the other replicas (one round trip).
func (p *Postgres) AnnouncePeers(ctx context.Context, n PeerNote) error {
	arg, ok := p.peerArg(n)
	if !ok {
		return nil
	}
	_, err := p.pool.Exec(ctx, `SELECT pg_notify('`+peerChannel+`', $1)`, arg)
	return pgErr("announce to peers", err)
}

func (p *Postgres) peerArg(n PeerNote) (string, bool) {
	b, err := json.Marshal(peerWire{Replica: p.replicaID, Schema: p.schema, Key: n.Key, Alert: n.Alert, Investigation: n.Investigation,
		Ended: n.Ended, Node: n.Node, At: n.At})
	if err != nil || len(b) > maxPeerPayload {
		return "", false
	}
	return string(b), true
}

// queuePeerNote adds to a decision's batch the note that its alert is part
// of its incident's investigation (dispatched or joined).
func (p *Postgres) queuePeerNote(b *pgx.Batch, key string, d AlertDecision) {
	if d.Decision != DecisionDispatched && d.Decision != DecisionJoined {
		return
	}
	if arg, ok := p.peerArg(PeerNote{Key: key, Alert: d.Fingerprint, Investigation: d.InvestigationID}); ok {
		b.Queue(`SELECT pg_notify('`+peerChannel+`', $1)`, arg)
	}
}

// heardPeer hands a note of another replica to the hub; anything it cannot
// read (a later version's) is ignored.
func (p *Postgres) heardPeer(payload string) {
	var w peerWire
	if json.Unmarshal([]byte(payload), &w) != nil || w.Replica == p.replicaID || w.Schema != p.schema {
		return
	}
	p.peers.deliver(PeerNote{Key: w.Key, Alert: w.Alert, Investigation: w.Investigation, Ended: w.Ended, Node: w.Node, At: w.At})
}

// HearPeers implements it for the Postgres the Switch uses, now and after
// a reconnect.
func (s *Switch) HearPeers(fn func(PeerNote)) { s.peers.hear(fn) }

// AnnouncePeers sends n through Postgres; on memory there is no one to
// tell.
func (s *Switch) AnnouncePeers(ctx context.Context, n PeerNote) error {
	s.mu.RLock()
	pg, onPG := s.pg, s.onPG
	s.mu.RUnlock()
	if !onPG || pg == nil {
		return nil
	}
	return pg.AnnouncePeers(ctx, n)
}

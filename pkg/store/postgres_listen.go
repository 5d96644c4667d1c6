package store

// Remembered states stay exact across replicas (docs/MANUAL.md, "Repeats are
// counted, not written"): every write of an alert state notifies the
// channel below in its transaction, and each replica listens on one
// connection of its own, forgetting what another replica changed. While it
// listens a remembered state serves for up to cacheMaxAge; while it does
// not (the connection broke, Postgres restarted) only for the flush
// interval, and everything remembered is forgotten when listening resumes.
// The same connection hears the other replicas' incident notes
// (postgres_peers.go).

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"
)

// stateChannel is the NOTIFY channel of alert-state writes; the payload is
// "<replica id> <fingerprint>", or "<replica id> *" for many.
const stateChannel = "kubecrew_alert_state"

// cacheMaxAge bounds how long a remembered state serves while listening.
const cacheMaxAge = 10 * time.Minute

// notifyArg is the payload announcing a write of fingerprint ("*": many).
func (p *Postgres) notifyArg(fingerprint string) string { return p.replicaID + " " + fingerprint }

// clear forgets every remembered state.
func (r *repeats) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.states)
}

// forgetStates forgets every remembered state (a write-through changed
// many).
func (p *Postgres) forgetStates() {
	if p.rep != nil {
		p.rep.clear()
	}
}

// Listening reports whether this replica hears the others now: a state
// another replica writes is forgotten here, and its incident notes arrive
// (a replica starting up hears nothing sent before it listens).
func (p *Postgres) Listening() bool { return p.rep != nil && p.rep.listening.Load() }

// listenLoop keeps one connection listening until ctx ends.
func (p *Postgres) listenLoop(ctx context.Context) {
	r := p.rep
	defer close(r.listenDone)
	wait := time.Second
	for ctx.Err() == nil {
		err := p.listen(ctx)
		r.listening.Store(false)
		r.clear()
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("not listening for other replicas' alert-state changes: remembered states serve for the flush interval only, and their incidents' new alerts are deduped here, not joined",
			zap.Error(err), zap.Duration("retry_in", wait))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// listen listens until the connection fails or ctx ends.
func (p *Postgres) listen(ctx context.Context) error {
	r := p.rep
	pc, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // its own connection, out of the pool
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+stateChannel+"; LISTEN "+peerChannel); err != nil {
		return err
	}
	// Changes made before LISTEN took effect were not heard.
	r.clear()
	r.listening.Store(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == peerChannel {
			p.heardPeer(n.Payload)
			continue
		}
		id, fp, ok := strings.Cut(n.Payload, " ")
		switch {
		case !ok || id == p.replicaID:
		case fp == "*":
			r.clear()
		default:
			r.forget(fp)
		}
	}
}

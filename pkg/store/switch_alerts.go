package store

// The Switch's CoreStore side: the core's alert states, claims, decisions and
// investigations, and how they ride out a Postgres outage (docs/MANUAL.md, "When
// Postgres is away").

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// ApplyAlert implements Alerts. On memory, claims are process-local: two
// core replicas could each dispatch one alert until Postgres is back.
func (s *Switch) ApplyAlert(ctx context.Context, fingerprint, agent string, fn DecideFunc, inv func(AlertDecision) *Investigation) (AlertDecision, error) {
	return run(s, ctx, "apply alert", func(ctx context.Context, st fullStore) (AlertDecision, error) {
		if pg, ok := st.(*Postgres); ok {
			d, state, err := pg.applyAlertState(ctx, fingerprint, agent, fn, inv)
			if err == nil {
				s.remember(state)
			}
			return d, err
		}
		if s.url != "" {
			fn = hold(fn, s.why) // s.mu is held by run
		}
		return st.ApplyAlert(ctx, fingerprint, agent, fn, inv)
	}, nil)
}

// hold turns a decision to dispatch into a queued one: the agent's slots
// count as full while Postgres is away.
func hold(fn DecideFunc, why string) DecideFunc {
	return func(prev AlertState, ok bool, _ int) (AlertDecision, AlertState) {
		d, st := fn(prev, ok, math.MaxInt32)
		if d.Decision == DecisionBusy {
			d.Reason = fmt.Sprintf("queued: postgres is unreachable (%s); no core replica dispatches while claims cannot be shared — dispatched once it answers", why)
		}
		return d, st
	}
}

// SyncClaims reads every replica's alert claims from Postgres into the
// mirror a fall to memory starts from (the background loop does it each
// retry interval). On memory it does nothing.
func (s *Switch) SyncClaims(ctx context.Context) error {
	s.mu.RLock()
	pg, onPG := s.pg, s.onPG
	s.mu.RUnlock()
	if !onPG {
		return nil
	}
	octx, cancel := context.WithTimeoutCause(ctx, s.o.opTimeout, errors.New("postgres: reading claims took too long"))
	defer cancel()
	states, err := pg.claimStates(octx, MemoryMaxAlerts)
	if err != nil {
		return err
	}
	s.kmu.Lock()
	defer s.kmu.Unlock()
	s.known = make(map[string]AlertState, len(states))
	for _, st := range states {
		s.known[st.Fingerprint] = st
	}
	return nil
}

// remember mirrors one alert state known to be in Postgres.
func (s *Switch) remember(st AlertState) {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	s.known[st.Fingerprint] = st
	if len(s.known) > MemoryMaxAlerts {
		k := tenth(len(s.known), MemoryMaxAlerts)
		for _, fp := range oldestKeys(s.known, k, func(a AlertState) time.Time { return a.LastSeen }, func(a AlertState) bool { return !a.InFlight }) {
			delete(s.known, fp)
		}
	}
}

// forgetClaim marks the mirrored alert holding investigation id no longer
// in flight (it finished on Postgres).
func (s *Switch) forgetClaim(id string) {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	for fp, st := range s.known {
		if st.InFlight && st.InvestigationID == id {
			st.InFlight = false
			s.known[fp] = st
		}
	}
}

func (s *Switch) knownStates() []AlertState {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	out := make([]AlertState, 0, len(s.known))
	for _, st := range s.known {
		out = append(out, st)
	}
	return out
}

// RecordDecision implements Alerts.
func (s *Switch) RecordDecision(ctx context.Context, d AlertDecision) error {
	if d.ID == "" {
		d.ID = newID() // one id, whichever store records it
	}
	if d.At.IsZero() {
		d.At = s.o.now()
	}
	return run0(s, ctx, "record decision", func(ctx context.Context, st fullStore) error { return st.RecordDecision(ctx, d) }, nil)
}

// FinishInvestigation implements Alerts. On memory, finishing an
// investigation dispatched on Postgres is kept and written through later,
// freeing the slot then.
func (s *Switch) FinishInvestigation(ctx context.Context, inv Investigation) error {
	return run0(s, ctx, "finish investigation", func(ctx context.Context, st fullStore) error {
		err := st.FinishInvestigation(ctx, inv)
		if _, ok := st.(*Postgres); ok && err == nil {
			s.forgetClaim(inv.ID)
		}
		return err
	},
		func(m *Memory, err error) error {
			if !errors.Is(err, ErrNotFound) || s.url == "" {
				return err
			}
			fin, perr := prepFinish(inv, s.o.now)
			if perr != nil {
				return perr
			}
			m.putInvestigation(fin)
			return nil
		})
}

// GetInvestigation implements Alerts.
func (s *Switch) GetInvestigation(ctx context.Context, id string) (Investigation, error) {
	return run(s, ctx, "get investigation", func(ctx context.Context, st fullStore) (Investigation, error) { return st.GetInvestigation(ctx, id) }, nil)
}

// ListInvestigations implements Alerts.
func (s *Switch) ListInvestigations(ctx context.Context, p Page) ([]Investigation, string, error) {
	l, err := run(s, ctx, "list investigations", func(ctx context.Context, st fullStore) (listed[Investigation], error) {
		items, next, err := st.ListInvestigations(ctx, p)
		return listed[Investigation]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// ListDecisions implements Alerts.
func (s *Switch) ListDecisions(ctx context.Context, p Page) ([]AlertDecision, string, error) {
	l, err := run(s, ctx, "list decisions", func(ctx context.Context, st fullStore) (listed[AlertDecision], error) {
		items, next, err := st.ListDecisions(ctx, p)
		return listed[AlertDecision]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// PendingAlerts implements Alerts.
func (s *Switch) PendingAlerts(ctx context.Context, agent string) ([]AlertState, error) {
	return run(s, ctx, "pending alerts", func(ctx context.Context, st fullStore) ([]AlertState, error) { return st.PendingAlerts(ctx, agent) }, nil)
}

// GetAlertState implements Alerts.
func (s *Switch) GetAlertState(ctx context.Context, fingerprint string) (AlertState, error) {
	return run(s, ctx, "alert state", func(ctx context.Context, st fullStore) (AlertState, error) { return st.GetAlertState(ctx, fingerprint) }, nil)
}

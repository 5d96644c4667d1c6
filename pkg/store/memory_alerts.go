package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// ApplyAlert runs fn under the store's lock, so deciding and recording one
// alert is atomic with respect to every other call.
func (m *Memory) ApplyAlert(ctx context.Context, fingerprint, agent string, fn DecideFunc, inv func(AlertDecision) *Investigation) (AlertDecision, error) {
	if err := required("fingerprint", fingerprint); err != nil {
		return AlertDecision{}, err
	}
	if err := required("agent", agent); err != nil {
		return AlertDecision{}, err
	}
	if err := ctx.Err(); err != nil {
		return AlertDecision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.alerts[fingerprint]
	d, st, i, err := decide(fingerprint, agent, prev, ok, m.inFlightLocked(agent), fn, inv, m.now)
	if err != nil {
		return AlertDecision{}, err
	}
	if i != nil {
		if _, dup := m.invs[i.ID]; dup {
			return AlertDecision{}, fmt.Errorf("investigation %s: %w", i.ID, ErrConflict)
		}
		m.invs[i.ID] = *i
		m.trimInvestigationsLocked()
	}
	m.setAlertLocked(st)
	m.trimAlertsLocked()
	m.decisions = append(m.decisions, d)
	m.trimDecisionsLocked()
	return d, nil
}

// RecordDecision records a rejected alert's decision.
func (m *Memory) RecordDecision(ctx context.Context, d AlertDecision) error {
	d, err := prepDecision(d, m.now)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decisions = append(m.decisions, d)
	m.trimDecisionsLocked()
	return nil
}

func (m *Memory) inFlightLocked(agent string) int { return len(m.inFlight[agent]) }

// setAlertLocked stores an alert state and keeps the per-agent in-flight
// index in step.
func (m *Memory) setAlertLocked(st AlertState) {
	if old, ok := m.alerts[st.Fingerprint]; ok && old.InFlight {
		delete(m.inFlight[old.Agent], st.Fingerprint)
	}
	if st.InFlight {
		set := m.inFlight[st.Agent]
		if set == nil {
			set = map[string]struct{}{}
			m.inFlight[st.Agent] = set
		}
		set[st.Fingerprint] = struct{}{}
	}
	m.alerts[st.Fingerprint] = st
}

// FinishInvestigation records the outcome of inv (status completed, partial
// or failed) and frees the agent's slot held by the alert that dispatched it.
func (m *Memory) FinishInvestigation(ctx context.Context, inv Investigation) error {
	inv, err := prepFinish(inv, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.invs[inv.ID]
	if !ok {
		return fmt.Errorf("investigation %s: %w", inv.ID, ErrNotFound)
	}
	m.invs[inv.ID] = mergeInvestigation(old, inv)
	m.freeSlotLocked(old.Fingerprint, inv.ID)
	return nil
}

// mergeInvestigation keeps old's identity and takes inv's outcome.
func mergeInvestigation(old, inv Investigation) Investigation {
	old.Status = inv.Status
	old.Findings = inv.Findings
	old.Answer = inv.Answer
	old.Error = inv.Error
	old.FinishedAt = inv.FinishedAt
	if inv.RunID != "" {
		old.RunID = inv.RunID
	}
	return old
}

// GetInvestigation returns one investigation or ErrNotFound.
func (m *Memory) GetInvestigation(ctx context.Context, id string) (Investigation, error) {
	if err := checkKey("investigation id", id); err != nil {
		return Investigation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.invs[id]
	if !ok {
		return Investigation{}, fmt.Errorf("investigation %s: %w", id, ErrNotFound)
	}
	return normInvestigation(i), nil
}

// ListInvestigations lists investigations newest first (by start, then id).
func (m *Memory) ListInvestigations(ctx context.Context, p Page) ([]Investigation, string, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []Investigation
	for _, i := range m.invs {
		if c.after(i.StartedAt, i.ID) {
			all = append(all, normInvestigation(i))
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(i Investigation) (time.Time, string) { return i.StartedAt, i.ID })
}

// ListDecisions lists decisions newest first (by time, then id).
func (m *Memory) ListDecisions(ctx context.Context, p Page) ([]AlertDecision, string, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []AlertDecision
	for _, d := range m.decisions {
		if c.after(d.At, d.ID) {
			all = append(all, d)
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(d AlertDecision) (time.Time, string) { return d.At, d.ID })
}

// PendingAlerts lists agent's alerts decided busy, oldest first (by first
// seen, then fingerprint).
func (m *Memory) PendingAlerts(ctx context.Context, agent string) ([]AlertState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []AlertState{}
	for _, s := range m.alerts {
		if s.Agent == agent && s.Pending {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b AlertState) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	})
	return out, nil
}

// GetAlertState returns one alert's state or ErrNotFound.
func (m *Memory) GetAlertState(ctx context.Context, fingerprint string) (AlertState, error) {
	if err := checkKey("fingerprint", fingerprint); err != nil {
		return AlertState{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.alerts[fingerprint]
	if !ok {
		return AlertState{}, fmt.Errorf("alert %s: %w", fingerprint, ErrNotFound)
	}
	return s, nil
}

// freeSlotLocked clears the in-flight mark of fingerprint's alert if
// investigation id holds it.
func (m *Memory) freeSlotLocked(fingerprint, id string) {
	if st, ok := m.alerts[fingerprint]; ok && st.InFlight && st.InvestigationID == id {
		st.InFlight = false
		m.setAlertLocked(st)
	}
}

// seedAlerts installs alert states known from Postgres (a Switch falling
// open to this memory): claims, queued alerts and cooldowns keep deciding
// during the outage.
func (m *Memory) seedAlerts(states []AlertState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range states {
		if _, ok := m.alerts[st.Fingerprint]; !ok {
			m.setAlertLocked(st)
		}
	}
}

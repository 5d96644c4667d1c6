package store

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
)

// countsRepeats reports whether s decides repeats from remembered states
// (Postgres with a flush interval, alone or behind a Switch).
func countsRepeats(s fullStore) bool {
	switch st := s.(type) {
	case *Postgres:
		return st.rep != nil
	case *Switch:
		st.mu.RLock()
		defer st.mu.RUnlock()
		return st.onPG && st.pg != nil && st.pg.rep != nil
	}
	return false
}

// rowCount counts rows straight from the database: what a kill -9 would
// leave, without the flush a list does first.
func rowCount(t *testing.T, p *Postgres, query string, args ...any) int {
	t.Helper()
	var n int
	if err := p.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A repeat changes a counter in memory, not a row: dispatched is written at
// once, five dedupes become one row of count 5 with its first and last
// time, written by the flush a list does (or the interval, or Close); a
// state change after them is written at once again.
func TestPostgresRepeatsAreCounted(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	p := newTestPostgres(t, c.Now, WithFlushInterval(time.Hour)) // only explicit flushes
	ctx := context.Background()
	fn := decider(c.Now, nil)
	d, err := p.ApplyAlert(ctx, "fp1", "noor", fn, nil)
	mustNil(t, err)
	if d.Decision != DecisionDispatched || rowCount(t, p, `SELECT count(*) FROM alert_decisions`) != 1 {
		t.Fatalf("dispatch %+v not written at once", d)
	}
	first := c.Now()
	for range 5 {
		c.Advance(time.Second)
		d, err := p.ApplyAlert(ctx, "fp1", "noor", fn, nil)
		mustNil(t, err)
		if d.Decision != DecisionDeduped || d.ID == "" {
			t.Fatalf("repeat = %+v", d)
		}
	}
	if n := rowCount(t, p, `SELECT count(*) FROM alert_decisions`); n != 1 {
		t.Fatalf("%d decision rows before the flush; repeats must not write", n)
	}
	counts, err := p.CountDecisions(ctx, first)
	mustNil(t, err)
	if counts[DecisionDeduped] != 5 || counts[DecisionDispatched] != 1 {
		t.Fatalf("CountDecisions = %v; want the 5 repeats counted", counts)
	}
	ds, _, err := p.ListDecisions(ctx, Page{})
	mustNil(t, err)
	if len(ds) != 2 || ds[0].Decision != DecisionDeduped || ds[0].Count != 5 || !ds[0].FirstAt.Equal(first.Add(time.Second)) ||
		!ds[0].At.Equal(c.Now()) || ds[1].Decision != DecisionDispatched || ds[1].Count != 1 || !ds[1].FirstAt.Equal(ds[1].At) {
		t.Fatalf("decisions after the flush = %+v", ds)
	}
	st, err := p.GetAlertState(ctx, "fp1")
	mustNil(t, err)
	if !st.LastSeen.Equal(c.Now()) || !st.InFlight {
		t.Fatalf("state after the flush = %+v", st)
	}
	// The slot frees (this process finishes it): the next decision reads
	// the state again, and a dispatch is written at once.
	mustNil(t, p.FinishInvestigation(ctx, Investigation{ID: ds[1].InvestigationID, Status: "completed"}))
	c.Advance(time.Second)
	d, err = p.ApplyAlert(ctx, "fp1", "noor", fn, nil)
	mustNil(t, err)
	if d.Decision != DecisionDispatched || rowCount(t, p, `SELECT count(*) FROM alert_decisions WHERE decision='dispatched'`) != 2 {
		t.Fatalf("after finishing: %+v", d)
	}
}

// Another replica's state change is heard (NOTIFY): this replica forgets
// the state it remembered and decides from the database — here at once,
// although its clock does not move; without the notification it would
// keep deciding deduped from memory.
func TestPostgresRepeatsHearOtherReplicas(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	u := pgtest.Schema(t, "kc")
	open := func() *Postgres {
		p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t), WithClock(c.Now), WithFlushInterval(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	a, b := open(), open()
	deadline := time.Now().Add(30 * time.Second)
	for !a.rep.listening.Load() {
		if time.Now().After(deadline) {
			t.Fatal("a is not listening after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx := context.Background()
	fn := decider(c.Now, nil)
	d, err := a.ApplyAlert(ctx, "fp1", "noor", fn, nil)
	mustNil(t, err)
	if d.Decision != DecisionDispatched {
		t.Fatalf("first: %+v", d)
	}
	if d, err := a.ApplyAlert(ctx, "fp1", "noor", fn, nil); err != nil || d.Decision != DecisionDeduped {
		t.Fatalf("a repeat: %+v %v", d, err)
	}
	// b finishes the investigation: the slot is free in Postgres.
	mustNil(t, b.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: "completed"}))
	for {
		d, err := a.ApplyAlert(ctx, "fp1", "noor", fn, nil)
		mustNil(t, err)
		if d.Decision == DecisionDispatched {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a still decides %s from what it remembers 30s after b freed the slot", d.Decision)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close writes what is pending; the flush loop writes within the interval
// without anyone asking.
func TestPostgresRepeatsFlush(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	u := pgtest.Schema(t, "kc")
	ctx := context.Background()
	p, err := OpenPostgres(ctx, u, zaptest.NewLogger(t), WithFlushInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	fn := decider(time.Now, nil)
	for range 3 {
		_, err := p.ApplyAlert(ctx, "fp1", "noor", fn, nil)
		mustNil(t, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rowCount(t, p, `SELECT coalesce(sum(count), 0) FROM alert_decisions`) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("repeats not flushed within 30s of a 50ms interval")
		}
		time.Sleep(20 * time.Millisecond)
	}
	q, err := OpenPostgres(ctx, u, zaptest.NewLogger(t), WithFlushInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for range 4 {
		_, err := q.ApplyAlert(ctx, "fp1", "noor", fn, nil)
		mustNil(t, err)
	}
	q.Close()
	p.Close()
	r := newTestPostgresURL(t, u)
	if n := rowCount(t, r, `SELECT coalesce(sum(count), 0) FROM alert_decisions`); n != 7 {
		t.Fatalf("%d decisions counted after Close; want 7", n)
	}
}

func newTestPostgresURL(t *testing.T, u string) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

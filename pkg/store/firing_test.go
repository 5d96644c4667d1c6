package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// contractFiring: each alert's newest decision, kept while it fires, every
// one of them however many decisions came after, in pages, with the total.
func contractFiring(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	decide := func(key, fp, status, kind string) {
		t.Helper()
		c.Advance(time.Second)
		d := AlertDecision{Fingerprint: fp, Alertname: "KubePodCrashLooping", Status: status, Decision: kind, Agent: "platform-sre",
			Reason: kind + " " + fp}
		if kind == DecisionRejected {
			mustNil(t, s.RecordDecision(ctx, d))
			return
		}
		_, err := s.ApplyAlert(ctx, key, d.Agent, func(AlertState, bool, int) (AlertDecision, AlertState) {
			return d, AlertState{Fingerprint: key, Alertname: d.Alertname, Agent: d.Agent, Firing: status == "firing", FirstSeen: c.Now(), LastSeen: c.Now()}
		}, nil)
		mustNil(t, err)
	}
	// Two alerts of one incident (one state row), each its own line.
	decide("shop/Deployment/api", "api-1", "firing", DecisionDispatched)
	decide("shop/Deployment/api", "api-2", "firing", DecisionJoined)
	decide("alert/gone", "gone", "firing", DecisionDispatched)
	decide("alert/gone", "gone", "resolved", DecisionResolved) // resolved: not listed
	decide("alert/bad", "bad", "firing", DecisionIgnored)
	decide("", "bad", "firing", DecisionRejected) // its newest says rejected: not listed
	decide("alert/unrouted", "unrouted", "firing", DecisionIgnored)
	decide("shop/Deployment/api", "api-1", "firing", DecisionDeduped) // newer: api-1's line is this one
	// Many more decisions after them (a storm elsewhere that resolves):
	// the alerts above stay listed whatever came later.
	for i := range 40 {
		decide(fmt.Sprintf("alert/s%d", i), fmt.Sprintf("s%d", i), "firing", DecisionDispatched)
		decide(fmt.Sprintf("alert/s%d", i), fmt.Sprintf("s%d", i), "resolved", DecisionResolved)
	}
	decide("alert/late", "late", "firing", DecisionBusy)

	want := []string{"late/busy", "api-1/deduped", "unrouted/ignored", "api-2/joined"}
	for _, size := range []int{1, 3, 50} {
		var got []string
		cur := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("page size %d: more pages than alerts", size)
			}
			items, next, total, err := s.ListFiring(ctx, Page{Limit: size, Cursor: cur})
			mustNil(t, err)
			if total != len(want) {
				t.Errorf("page size %d, page %d: total %d, want %d", size, pages, total, len(want))
			}
			for _, d := range items {
				got = append(got, d.Fingerprint+"/"+d.Decision)
				if d.Reason != d.Decision+" "+d.Fingerprint {
					t.Errorf("%s: reason %q is not its newest decision's", d.Fingerprint, d.Reason)
				}
			}
			if next == "" {
				break
			}
			cur = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: firing %v, want %v", size, got, want)
		}
	}
	if _, _, _, err := s.ListFiring(ctx, Page{Limit: 2, Cursor: "not-a-cursor"}); err == nil {
		t.Error("a cursor the store never issued was accepted")
	}
}

// benchListFiring measures the dashboard's read of the alerts firing (its
// first 30 and the total) over 100,000 decisions of 2,000 alerts, 50 each
// (a storm's repeats), a quarter of the alerts resolved since.
func benchListFiring(b *testing.B, s fullStore, seed func(ds []AlertDecision)) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ds := make([]AlertDecision, 0, 100_000)
	for i := range 100_000 {
		fp := i % 2000
		d := AlertDecision{ID: fmt.Sprintf("d-%06d", i), Fingerprint: fmt.Sprintf("fp-%04d", fp), Alertname: "KubePodCrashLooping",
			Status: "firing", Decision: DecisionDeduped, Agent: "platform-sre", Reason: "deduped", At: t0.Add(time.Duration(i) * time.Second), Count: 1}
		if i >= 98_000 && fp%4 == 0 {
			d.Status, d.Decision = "resolved", DecisionResolved
		}
		ds = append(ds, d)
	}
	seed(ds)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		items, _, total, err := s.ListFiring(ctx, Page{Limit: 30})
		if err != nil || len(items) != 30 || total != 1500 {
			b.Fatalf("ListFiring = %d items, total %d, %v", len(items), total, err)
		}
	}
}

func BenchmarkListFiringMemory(b *testing.B) {
	m := NewMemory(time.Now)
	benchListFiring(b, m, func(ds []AlertDecision) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.decisions = append(m.decisions, ds...)
	})
}

func BenchmarkListFiringPostgres(b *testing.B) {
	p := newTestPostgres(b, time.Now)
	benchListFiring(b, p, func(ds []AlertDecision) {
		var c decisionColumns
		for _, d := range ds {
			c.add(normDecision(d))
		}
		_, err := p.pool.Exec(context.Background(), `INSERT INTO alert_decisions (`+decisionCols+`)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
				$9::timestamptz[], $10::int[], $11::timestamptz[])`, c.id, c.fingerprint, c.alertname, c.status, c.decision, c.agent,
			c.investigationID, c.reason, c.at, c.count, c.firstAt)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.pool.Exec(context.Background(), `ANALYZE alert_decisions`); err != nil {
			b.Fatal(err)
		}
	})
}

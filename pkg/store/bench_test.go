package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// benchApplyAlert measures one claim-and-record: lock, read state and the
// agent's in-flight count, decide, write state and decision (and, one time
// in ten, dispatch an investigation and finish it, so slots free up).
func benchApplyAlert(b *testing.B, s fullStore) {
	ctx := context.Background()
	fn := decider(time.Now, nil)
	var n atomic.Int64
	finish := func(d AlertDecision) {
		if d.Decision == DecisionDispatched {
			if err := s.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: "completed"}); err != nil {
				b.Error(err)
			}
		}
	}
	one := func() {
		i := n.Add(1)
		d, err := s.ApplyAlert(ctx, fmt.Sprintf("fp-%d", i%500), fmt.Sprintf("agent-%d", i%5), fn, nil)
		if err != nil {
			b.Error(err)
			return
		}
		if i%10 == 0 {
			finish(d)
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			one()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				one()
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
}

func BenchmarkApplyAlertMemory(b *testing.B) {
	benchApplyAlert(b, NewMemory(time.Now))
}

func BenchmarkApplyAlertPostgres(b *testing.B) {
	benchApplyAlert(b, newTestPostgres(b, time.Now))
}

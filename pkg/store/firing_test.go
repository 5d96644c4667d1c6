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

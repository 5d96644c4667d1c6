package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
)

// TestPeersHearEachOther: what one replica's store decides and announces
// reaches the other's HearPeers (a Switch's, through the Postgres it
// opened) in commit order — a dispatch, a join, a lost node, the end —
// while a repeat and a key too long for a notification send nothing, no
// replica hears itself, and none hears a replica of another schema
// (NOTIFY reaches the whole database).
func TestPeersHearEachOther(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	u := pgtest.Schema(t, "kc")
	ctx := context.Background()
	a, err := OpenPostgres(ctx, u, zaptest.NewLogger(t), WithFlushInterval(time.Second))
	mustNil(t, err)
	t.Cleanup(a.Close)
	b, err := Open(ctx, u, zaptest.NewLogger(t), WithFlushInterval(time.Second))
	mustNil(t, err)
	t.Cleanup(b.Close)
	heardA, heardB := make(chan PeerNote, 16), make(chan PeerNote, 16)
	a.HearPeers(func(n PeerNote) { heardA <- n })
	b.HearPeers(func(n PeerNote) { heardB <- n })
	deadline := time.Now().Add(30 * time.Second)
	for !a.rep.listening.Load() || !b.pg.rep.listening.Load() {
		if time.Now().After(deadline) {
			t.Fatal("not listening after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// member decides pod as a member of key's incident: dispatched when
	// nothing runs, joined to what runs, deduped when it is part of it.
	member := func(pod string, repeat bool) DecideFunc {
		return func(prev AlertState, ok bool, _ int) (AlertDecision, AlertState) {
			st := prev
			st.Firing, st.Alertname = true, "KubePodCrashLooping"
			d := AlertDecision{Fingerprint: pod, Alertname: "KubePodCrashLooping", Status: "firing", InvestigationID: prev.InvestigationID}
			switch {
			case !ok || !prev.InFlight:
				d.Decision, d.InvestigationID = DecisionDispatched, ""
			case repeat:
				d.Decision = DecisionDeduped
			default:
				d.Decision = DecisionJoined
			}
			return d, st
		}
	}
	other, err := OpenPostgres(ctx, pgtest.Schema(t, "kc"), zaptest.NewLogger(t), WithFlushInterval(time.Second))
	mustNil(t, err)
	t.Cleanup(other.Close)
	mustNil(t, other.AnnouncePeers(ctx, PeerNote{Node: "node-7", At: time.Now()})) // before a's: b would hear it first
	const key = "shop/Deployment/api"
	first, err := a.ApplyAlert(ctx, key, "noor", member("pod-1", false), nil)
	mustNil(t, err)
	inv := first.InvestigationID
	for _, c := range []struct {
		key, pod string
		repeat   bool
		want     string
	}{
		{key, "pod-1", true, DecisionDeduped},
		{key, "pod-2", false, DecisionJoined},
		{strings.Repeat("k", maxPeerPayload), "pod-3", false, DecisionDispatched},
	} {
		d, err := a.ApplyAlert(ctx, c.key, "noor", member(c.pod, c.repeat), nil)
		if err != nil || d.Decision != c.want {
			t.Fatalf("%s: %+v %v, want %s", c.pod, d, err, c.want)
		}
	}
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	mustNil(t, a.AnnouncePeers(ctx, PeerNote{Node: "node-7", At: at}))
	mustNil(t, a.FinishInvestigation(ctx, Investigation{ID: inv, Status: "completed"}))
	for i, want := range []PeerNote{
		{Key: key, Alert: "pod-1", Investigation: inv},
		{Key: key, Alert: "pod-2", Investigation: inv},
		{Node: "node-7", At: at},
		{Key: key, Investigation: inv, Ended: true},
	} {
		select {
		case got := <-heardB:
			if got.Key != want.Key || got.Alert != want.Alert || got.Investigation != want.Investigation ||
				got.Ended != want.Ended || got.Node != want.Node || !got.At.Equal(want.At) {
				t.Fatalf("note %d heard by b: %+v, want %+v", i, got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("b did not hear note %d (%+v) within 30s", i, want)
		}
	}
	// b's own note reaches a, and a heard nothing of its own before it.
	mustNil(t, b.AnnouncePeers(ctx, PeerNote{Node: "node-8", At: at}))
	select {
	case got := <-heardA:
		if got.Node != "node-8" {
			t.Fatalf("a heard %+v first, want b's node-8", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a did not hear b within 30s")
	}
	select {
	case got := <-heardB:
		t.Fatalf("b heard %+v more (itself, or a repeat or the long key)", got)
	default:
	}
}

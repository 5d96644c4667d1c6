package decide

import (
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func route() Route { return Route{Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1} }

func firing(hash string) Alert {
	return Alert{Fingerprint: "fp1", Alertname: "KubePodCrashLooping", Status: StatusFiring, Hash: hash}
}

// investigated is the state of an alert investigated n times, the last one
// ago before t0, and finished.
func investigated(n int, ago time.Duration, hash string) store.AlertState {
	return store.AlertState{
		Fingerprint: "fp1", Alertname: "KubePodCrashLooping", Agent: "platform-sre",
		Firing: true, ContentHash: hash, FirstSeen: t0.Add(-48 * time.Hour), LastSeen: t0.Add(-time.Minute),
		LastInvestigated: t0.Add(-ago), Investigations: n, InvestigationID: "inv-old",
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	type want struct {
		decision string
		reason   string // substring
		invID    string
		inFlight bool
		pending  bool
		firing   bool
		n        int  // investigations after
		lastInv  bool // LastInvestigated == t0
		hash     string
	}
	busyRoute := route()
	two := route()
	two.MaxInFlight = 2
	ign := route()
	ign.Ignored, ign.IgnoreReason = true, "ignore rule fixtures (routes.yaml:4) matched namespace=~\"fixtures\""
	resolved := firing("h1")
	resolved.Status = StatusResolved
	inFlight := investigated(1, 5*time.Minute, "h1")
	inFlight.InFlight, inFlight.InvestigationID = true, "inv-run"
	staleInFlight := investigated(1, 25*time.Minute, "h1")
	staleInFlight.InFlight = true
	pending := store.AlertState{Fingerprint: "fp1", Agent: "platform-sre", Firing: true, Pending: true, FirstSeen: t0.Add(-time.Hour)}
	refired := investigated(0, 31*time.Minute, "h1")
	refired.Firing = false
	refiredSoon := investigated(0, 10*time.Minute, "h1")
	refiredSoon.Firing = false
	resolvedRunning := investigated(2, 5*time.Minute, "h1")
	resolvedRunning.InFlight = true

	tests := []struct {
		name     string
		alert    Alert
		route    Route
		prev     store.AlertState
		known    bool
		inFlight int
		stale    time.Duration
		want     want
	}{
		{"new alert, agent idle", firing("h1"), route(), store.AlertState{}, false, 0, 0,
			want{decision: Dispatched, reason: "new alert", invID: "inv-new", inFlight: true, firing: true, n: 1, lastInv: true, hash: "h1"}},
		{"new alert, agent at max_in_flight", firing("h1"), busyRoute, store.AlertState{}, false, 1, 0,
			want{decision: Busy, reason: "1/1 alert run(s) in flight: queued", pending: true, firing: true}},
		{"new alert, max_in_flight 2 with one running", firing("h1"), two, store.AlertState{}, false, 1, 0,
			want{decision: Dispatched, invID: "inv-new", inFlight: true, firing: true, n: 1, lastInv: true, hash: "h1"}},
		{"ignored firing", firing("h1"), ign, store.AlertState{}, false, 0, 0,
			want{decision: Ignored, reason: "ignore rule fixtures", firing: true}},
		{"ignored resolved", resolved, ign, store.AlertState{}, false, 0, 0,
			want{decision: Ignored, reason: "ignore rule"}},
		{"ignored clears a queued alert", firing("h1"), ign, pending, true, 0, 0,
			want{decision: Ignored, firing: true}},
		{"resolved after investigations closes standing state", resolved, route(), investigated(3, 2*time.Hour, "h1"), true, 0, 0,
			want{decision: Resolved, reason: "closed after 3 investigation(s)", hash: "h1"}},
		{"resolved never seen", resolved, route(), store.AlertState{}, false, 0, 0,
			want{decision: Resolved, reason: "never investigated"}},
		{"resolved while queued leaves the queue", resolved, route(), pending, true, 1, 0,
			want{decision: Resolved, reason: "dropped from the busy queue"}},
		{"resolved while investigated keeps the run's slot", resolved, route(), resolvedRunning, true, 1, 0,
			want{decision: Resolved, reason: "still running", inFlight: true, hash: "h1"}},
		{"same fingerprint in flight", firing("h1"), route(), inFlight, true, 1, 20 * time.Minute,
			want{decision: Deduped, reason: "inv-run of this alert in flight for 5m0s", invID: "inv-run", inFlight: true, firing: true, n: 1, hash: "h1"}},
		{"in flight without stale limit stays deduped", firing("h1"), route(), staleInFlight, true, 1, 0,
			want{decision: Deduped, inFlight: true, firing: true, n: 1, hash: "h1", invID: "inv-old"}},
		{"stale in-flight investigation presumed lost", firing("h1"), route(), staleInFlight, true, 1, 20 * time.Minute,
			want{decision: Cooldown, reason: "presumed lost", firing: true, n: 1, hash: "h1"}},
		{"stale and past cooldown re-dispatches, its own slot not counted", firing("h1"), route(), func() store.AlertState {
			s := investigated(1, 40*time.Minute, "h1")
			s.InFlight = true
			return s
		}(), true, 1, 20 * time.Minute,
			want{decision: Dispatched, reason: "presumed lost", invID: "inv-new", inFlight: true, firing: true, n: 2, lastInv: true, hash: "h1"}},
		{"investigated 10m ago: cooldown", firing("h1"), route(), investigated(1, 10*time.Minute, "h1"), true, 0, 0,
			want{decision: Cooldown, reason: "investigated 10m0s ago; cooldown 30m0s", firing: true, n: 1, hash: "h1"}},
		{"changed within cooldown is still cooldown", firing("h2"), route(), investigated(1, 10*time.Minute, "h1"), true, 0, 0,
			want{decision: Cooldown, reason: "content changed since", firing: true, n: 1, hash: "h1"}},
		{"standing after first investigation: 30m backoff elapsed", firing("h1"), route(), investigated(1, 31*time.Minute, "h1"), true, 0, 0,
			want{decision: Dispatched, reason: "backoff 30m0s elapsed since investigation #1", invID: "inv-new", inFlight: true, firing: true, n: 2, lastInv: true, hash: "h1"}},
		{"standing after second investigation: waits 1h", firing("h1"), route(), investigated(2, 45*time.Minute, "h1"), true, 0, 0,
			want{decision: Cooldown, reason: "standing alert unchanged since investigation #2 45m0s ago; backoff 1h0m0s", firing: true, n: 2, hash: "h1"}},
		{"standing after second investigation: 1h elapsed", firing("h1"), route(), investigated(2, 61*time.Minute, "h1"), true, 0, 0,
			want{decision: Dispatched, reason: "backoff 1h0m0s elapsed", invID: "inv-new", inFlight: true, firing: true, n: 3, lastInv: true, hash: "h1"}},
		{"standing but changed after cooldown", firing("h2"), route(), investigated(2, 45*time.Minute, "h1"), true, 0, 0,
			want{decision: Dispatched, reason: "standing alert changed", invID: "inv-new", inFlight: true, firing: true, n: 3, lastInv: true, hash: "h2"}},
		{"standing capped at 24h: 23h is too soon", firing("h1"), route(), investigated(12, 23*time.Hour, "h1"), true, 0, 0,
			want{decision: Cooldown, reason: "backoff 24h0m0s", firing: true, n: 12, hash: "h1"}},
		{"standing capped at 24h: 24h is due", firing("h1"), route(), investigated(12, 24*time.Hour, "h1"), true, 0, 0,
			want{decision: Dispatched, invID: "inv-new", inFlight: true, firing: true, n: 13, lastInv: true, hash: "h1"}},
		{"resolved then firing again after cooldown", firing("h1"), route(), refired, true, 0, 0,
			want{decision: Dispatched, reason: "firing again; last investigated 31m0s ago", invID: "inv-new", inFlight: true, firing: true, n: 1, lastInv: true, hash: "h1"}},
		{"resolved then firing again within cooldown", firing("h1"), route(), refiredSoon, true, 0, 0,
			want{decision: Cooldown, firing: true, hash: "h1"}},
		{"due standing alert but agent busy", firing("h1"), route(), investigated(1, 31*time.Minute, "h1"), true, 1, 0,
			want{decision: Busy, reason: "backoff 30m0s elapsed", pending: true, firing: true, n: 1, hash: "h1"}},
		{"queued alert, agent still busy", firing("h1"), route(), pending, true, 1, 0,
			want{decision: Busy, reason: "queued since", pending: true, firing: true}},
		{"queued alert, agent free", firing("h1"), route(), pending, true, 0, 0,
			want{decision: Dispatched, reason: "queued since", invID: "inv-new", inFlight: true, firing: true, n: 1, lastInv: true, hash: "h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Alert: tt.alert, Route: tt.route, Prev: tt.prev, Known: tt.known, AgentInFlight: tt.inFlight, Now: t0, NewID: "inv-new", StaleAfter: tt.stale,
				Key: "shop/Deployment/api"}
			d, st := Decide(in)
			w := tt.want
			if d.Decision != w.decision {
				t.Fatalf("decision = %q (%s), want %q", d.Decision, d.Reason, w.decision)
			}
			if d.Reason == "" || !strings.Contains(d.Reason, w.reason) {
				t.Errorf("reason = %q, want it to contain %q", d.Reason, w.reason)
			}
			if d.InvestigationID != w.invID {
				t.Errorf("investigation id = %q, want %q", d.InvestigationID, w.invID)
			}
			if d.Fingerprint != "fp1" || d.Alertname != tt.alert.Alertname || d.Status != tt.alert.Status || d.Agent != "platform-sre" || !d.At.Equal(t0) {
				t.Errorf("decision identity = %+v", d)
			}
			if st.InFlight != w.inFlight || st.Pending != w.pending || st.Firing != w.firing {
				t.Errorf("state inFlight/pending/firing = %v/%v/%v, want %v/%v/%v", st.InFlight, st.Pending, st.Firing, w.inFlight, w.pending, w.firing)
			}
			if st.Investigations != w.n {
				t.Errorf("investigations = %d, want %d", st.Investigations, w.n)
			}
			if st.LastInvestigated.Equal(t0) != w.lastInv {
				t.Errorf("last investigated = %v, want now=%v", st.LastInvestigated, w.lastInv)
			}
			if st.ContentHash != w.hash {
				t.Errorf("content hash = %q, want %q", st.ContentHash, w.hash)
			}
			if w.decision == Dispatched && st.InvestigationID != "inv-new" {
				t.Errorf("state investigation id = %q", st.InvestigationID)
			}
			if !st.LastSeen.Equal(t0) || st.Fingerprint != "fp1" || st.Agent != "platform-sre" {
				t.Errorf("state identity = %+v", st)
			}
			// Pure: deciding twice gives the same answer.
			d2, st2 := Decide(in)
			if d2 != d || st2 != st {
				t.Errorf("not pure: %+v/%+v then %+v/%+v", d, st, d2, st2)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	h := time.Hour
	tests := []struct {
		cooldown time.Duration
		n        int
		want     time.Duration
	}{
		{30 * time.Minute, 0, 30 * time.Minute},
		{30 * time.Minute, 1, 30 * time.Minute},
		{30 * time.Minute, 2, h},
		{30 * time.Minute, 3, 2 * h},
		{30 * time.Minute, 4, 4 * h},
		{30 * time.Minute, 5, 8 * h},
		{30 * time.Minute, 6, 16 * h},
		{30 * time.Minute, 7, 24 * h},
		{30 * time.Minute, 1000, 24 * h},
		{h, 3, 4 * h},
		{48 * h, 3, 48 * h},
	}
	for _, tt := range tests {
		if got := Backoff(tt.cooldown, tt.n); got != tt.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", tt.cooldown, tt.n, got, tt.want)
		}
	}
}

// TestStandingAlertOverThreeDays replays an alert that fires unchanged
// every five minutes for three days (each investigation finishing at once)
// and checks when it was investigated: 0, 30m, 1h30, 3h30, 7h30, 15h30,
// 31h30, 55h30 — and every other webhook was a cooldown.
func TestStandingAlertOverThreeDays(t *testing.T) {
	t.Parallel()
	var (
		st    store.AlertState
		known bool
		got   []time.Duration
		count = map[string]int{}
	)
	for now := t0; now.Before(t0.Add(72 * time.Hour)); now = now.Add(5 * time.Minute) {
		d, next := Decide(Input{Alert: firing("h1"), Route: route(), Prev: st, Known: known, Now: now, NewID: "inv"})
		count[d.Decision]++
		if d.Decision == Dispatched {
			got = append(got, now.Sub(t0))
			next.InFlight = false // the investigation finished
		}
		st, known = next, true
	}
	want := []time.Duration{0, 30 * time.Minute, 90 * time.Minute, 210 * time.Minute, 450 * time.Minute, 930 * time.Minute, 1890 * time.Minute, 3330 * time.Minute}
	if len(got) != len(want) {
		t.Fatalf("investigated at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("investigated at %v, want %v", got, want)
		}
	}
	if count[Cooldown] != 72*12-len(want) {
		t.Errorf("decisions = %v", count)
	}
	// Once it resolves and fires again after the cooldown it is new.
	d, st := Decide(Input{Alert: Alert{Fingerprint: "fp1", Alertname: "KubePodCrashLooping", Status: StatusResolved, Hash: "h1"}, Route: route(), Prev: st, Known: true, Now: t0.Add(72 * time.Hour)})
	if d.Decision != Resolved || st.Investigations != 0 {
		t.Fatalf("resolve: %+v %+v", d, st)
	}
	d, _ = Decide(Input{Alert: firing("h1"), Route: route(), Prev: st, Known: true, Now: t0.Add(72*time.Hour + 10*time.Minute), NewID: "inv"})
	if d.Decision != Dispatched {
		t.Fatalf("refire after resolve: %+v", d)
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	pending := store.AlertState{Fingerprint: "fp1", Alertname: "KubePodCrashLooping", Agent: "platform-sre", Firing: true, Pending: true, FirstSeen: t0.Add(-time.Minute)}
	tests := []struct {
		name     string
		prev     store.AlertState
		known    bool
		inFlight int
		want     string
		reason   string
	}{
		{"queued and the agent is free", pending, true, 0, Dispatched, "retry: agent freed a slot; queued since"},
		{"queued, another alert took the slot", pending, true, 1, Busy, "queued"},
		{"no longer queued", investigated(1, time.Minute, "h1"), true, 0, Deduped, "no longer queued"},
		{"resolved meanwhile", store.AlertState{Fingerprint: "fp1", Agent: "platform-sre"}, true, 0, Deduped, "no longer queued"},
		{"unknown", store.AlertState{}, false, 0, Deduped, "no longer queued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, st := Retry(Input{Alert: firing(""), Route: route(), Prev: tt.prev, Known: tt.known, AgentInFlight: tt.inFlight, Now: t0, NewID: "inv-new"})
			if d.Decision != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("got %s (%s), want %s (%s)", d.Decision, d.Reason, tt.want, tt.reason)
			}
			if tt.want == Deduped && st != tt.prev {
				t.Errorf("state changed on a skipped retry: %+v", st)
			}
		})
	}
}

// TestDecideIncident: another alert of a running incident joins it; one
// resolving while others of it fire does not close it.
func TestDecideIncident(t *testing.T) {
	t.Parallel()
	inFlight := investigated(1, 5*time.Minute, "h1")
	inFlight.InFlight, inFlight.InvestigationID = true, "inv-run"
	resolved := firing("h1")
	resolved.Status = StatusResolved
	tests := []struct {
		name          string
		alert         Alert
		member        bool
		others        int
		decision      string
		reason        string
		stillInFlight bool
	}{
		{"another alert joins", firing("h9"), false, 0, Joined, "also firing: joined investigation inv-run of incident shop/Deployment/api (in flight for 5m0s)", true},
		{"a member's repeat is deduped", firing("h1"), true, 0, Deduped, "inv-run of this alert in flight", true},
		{"one resolving while others fire", resolved, true, 3, Resolved, "incident shop/Deployment/api stays open: 3 other alert(s) of it still firing", true},
		{"the last one resolving", resolved, true, 0, Resolved, "investigation inv-run still running", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, st := Decide(Input{Alert: tt.alert, Route: route(), Prev: inFlight, Known: true, AgentInFlight: 1, Now: t0, NewID: "inv-new",
				StaleAfter: 20 * time.Minute, Key: "shop/Deployment/api", NewMember: !tt.member, OthersFiring: tt.others})
			if d.Decision != tt.decision || !strings.Contains(d.Reason, tt.reason) || st.InFlight != tt.stillInFlight {
				t.Fatalf("Decide = %s (%s), in flight %v; want %s (%s)", d.Decision, d.Reason, st.InFlight, tt.decision, tt.reason)
			}
			if tt.decision == Joined && d.InvestigationID != "inv-run" {
				t.Fatalf("joined decision names investigation %q", d.InvestigationID)
			}
			if tt.others > 0 && !st.Firing {
				t.Fatal("incident closed while others of it fire")
			}
		})
	}
}

func TestDrop(t *testing.T) {
	t.Parallel()
	pending := store.AlertState{Fingerprint: "shop/Deployment/api", Agent: "platform-sre", Firing: true, Pending: true, FirstSeen: t0.Add(-time.Hour)}
	in := Input{Alert: firing("h1"), Route: route(), Prev: pending, Known: true, Now: t0}
	d, st := Drop(in, "busy queue of platform-sre full (500): dropped, severity warning is the lowest")
	if d.Decision != Dropped || st.Pending || !st.Firing || d.Reason != "busy queue of platform-sre full (500): dropped, severity warning is the lowest" {
		t.Fatalf("Drop = %+v, %+v", d, st)
	}
	in.Prev.Pending = false
	if d, st := Drop(in, "x"); d.Decision != Deduped || st != in.Prev {
		t.Fatalf("Drop of an incident no longer queued = %+v, %+v: want it left alone", d, st)
	}
}

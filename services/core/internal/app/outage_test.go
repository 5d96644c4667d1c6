package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// switchReplica is one core process on the fall-open store (store.Open, as
// main wires it) of dsn; the test drives its reconnects.
func switchReplica(t *testing.T, dsn string, agent *agenttest.Agent) (*testCore, *store.Switch) {
	t.Helper()
	env := map[string]string{"AGENT_PEERS": "platform-sre=" + agent.URL(), "PEER_URL_TEMPLATE": "http://127.0.0.1:1/{slug}", "AGENT_CALL_TIMEOUT": "5m"}
	laptop(env)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	sw, err := store.Open(context.Background(), dsn, log, store.WithConnectTimeout(3*time.Second), store.WithOpTimeout(3*time.Second), store.WithRetryInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	core, err := app.New(cfg, nil, app.Deps{Store: sw, Log: log, MaintainEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCore{App: core, Store: sw, Agent: agent}
	startHTTP(t, tc)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
		sw.Close()
	})
	return tc, sw
}

// TestTwoReplicasThroughAPostgresOutage plays exactly what docs/MANUAL.md's
// "When Postgres is away" describes, with two core replicas and a
// throwaway Postgres cluster that is really stopped and started: during the
// outage neither replica dispatches (the per-agent limit of 1 holds: the
// investigation in flight stays the only one), each dedupes and cools down
// from the claims it knew and queues the rest; when Postgres is back the
// queue is written through and dispatched once, and nothing investigated
// before the outage is investigated again.
func TestTwoReplicasThroughAPostgresOutage(t *testing.T) {
	t.Parallel()
	pgc := pgtest.StartCluster(t)
	agent := agenttest.New(t, "platform-sre")
	gate := agent.Gate()
	r1, sw1 := switchReplica(t, pgc.URL(), agent)
	r2, sw2 := switchReplica(t, pgc.URL(), agent)
	post := func(r *testCore, fp, want string) string {
		t.Helper()
		code, b := call(t, http.MethodPost, r.URL+"/api/v1/alerts", webhookBody(alert(fp, "KubePodCrashLooping", "prod", "firing")))
		ans := decode[struct {
			Decisions []struct{ Decision, Reason string }
		}](t, b)
		if code != 200 || len(ans.Decisions) != 1 || ans.Decisions[0].Decision != want {
			t.Fatalf("%s: %d %s, want %s", fp, code, b, want)
		}
		return ans.Decisions[0].Reason
	}
	runs := func(n int, why string) {
		t.Helper()
		waitFor(t, 20*time.Second, why, func() bool { return len(agent.Runs()) >= n })
		if got := len(agent.Runs()); got != n {
			t.Fatalf("%s: %d agent runs, want %d", why, got, n)
		}
	}

	// Before: C investigated and done (in cooldown); A in flight (holding
	// the agent's one slot); B queued behind it.
	post(r1, "cccc0001", "dispatched")
	runs(1, "C dispatched")
	gate <- struct{}{}
	r1.WaitIdle()
	post(r1, "aaaa0001", "dispatched")
	runs(2, "A dispatched")
	post(r2, "bbbb0001", "busy")
	// Replica 2 has read the fleet's claims (its loop does each retry
	// interval); then A is re-sent once, to replica 1, so replica 2's copy of
	// A is older than the database's.
	if err := sw2.SyncClaims(context.Background()); err != nil {
		t.Fatal(err)
	}

	pgc.Stop()

	// During: each replica decides from the claims it knew — A in flight,
	// C in cooldown (replica 2 knows them from its last sync) — and queues
	// the rest; a new alert is queued by both; nothing is dispatched.
	post(r1, "aaaa0001", "deduped")
	post(r1, "cccc0001", "cooldown")
	post(r2, "aaaa0001", "deduped")
	post(r2, "cccc0001", "cooldown")
	if why := post(r1, "dddd0001", "busy"); !strings.Contains(why, "postgres is unreachable") {
		t.Errorf("queued during the outage, reason %q", why)
	}
	post(r2, "dddd0001", "busy")
	post(r2, "eeee0001", "busy")
	for _, sw := range []*store.Switch{sw1, sw2} {
		if st := sw.State(); !strings.HasPrefix(st, "degraded") {
			t.Fatalf("store state during the outage: %q", st)
		}
	}
	gate <- struct{}{} // A finishes during the outage: its slot frees in memory...
	r1.WaitIdle()
	r1.Upkeep(context.Background())
	r2.Upkeep(context.Background())
	runs(2, "during the outage") // ...and still nothing is dispatched

	pgc.Start()
	ctx := context.Background()
	for i, sw := range []*store.Switch{sw1, sw2} {
		if err := sw.Reconnect(ctx); err != nil {
			t.Fatalf("replica %d reconnect: %v", i+1, err)
		}
		if st := sw.State(); st != "postgres" {
			t.Fatalf("replica %d after reconnect: %q", i+1, st)
		}
	}

	// After: the queue drains one at a time — B (queued first), then D,
	// then E — and A and C are not investigated again.
	r1.Upkeep(ctx)
	r2.Upkeep(ctx)
	runs(3, "the first queued alert dispatched after the outage")
	gate <- struct{}{}
	runs(4, "the second queued alert dispatched after the first finished")
	gate <- struct{}{}
	runs(5, "the third queued alert dispatched after the second finished")
	close(gate)
	r1.WaitIdle()
	r2.WaitIdle()
	r1.Upkeep(ctx)
	r2.Upkeep(ctx)
	r1.WaitIdle()
	r2.WaitIdle()
	runs(5, "after the outage")
	// Counted by incident: one replica may dispatch what the other queued
	// from the state alone, which knows the incident, not its first alert.
	key := func(fp string) string { return soloKey(alert(fp, "KubePodCrashLooping", "prod", "firing")) }
	for fp, want := range map[string]int{"aaaa0001": 1, "bbbb0001": 1, "cccc0001": 1, "dddd0001": 1, "eeee0001": 1} {
		if n := agent.RunsFor(key(fp)); n != want {
			t.Errorf("alert %s investigated %d times, want %d", fp, n, want)
		}
	}
	if got := agent.Runs()[2].Request.Context["correlation_key"]; got != key("bbbb0001") {
		t.Errorf("first after the outage: %s, want bbbb0001 (queued first)", got)
	}
	// The decisions taken during the outage were written through.
	_, b, _ := do(t, http.MethodGet, r2.URL+"/api/v1/alerts?limit=500", nil)
	if n := strings.Count(string(b), "postgres is unreachable"); n < 3 {
		t.Errorf("%d queued outage decisions listed after it, want at least 3 (and the upkeep's retries): %s", n, b)
	}
}

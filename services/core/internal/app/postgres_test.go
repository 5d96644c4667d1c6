package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// pgSchema returns a DATABASE_URL on a fresh schema (dropped at cleanup).
// Without Postgres it skips, or fails when CI=true.
func pgSchema(t testing.TB) string { return pgtest.Schema(t, "core") }

func openPG(t testing.TB, dsn string) *store.Postgres {
	t.Helper()
	pg, err := store.OpenPostgres(context.Background(), dsn, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	return pg
}

// replica is one core process on a shared database, pointing at agent.
func replica(t testing.TB, dsn string, agent *agenttest.Agent) *testCore {
	t.Helper()
	env := map[string]string{"AGENT_PEERS": "platform-sre=" + agent.URL(), "PEER_URL_TEMPLATE": "http://127.0.0.1:1/{slug}", "AGENT_CALL_TIMEOUT": "10s"}
	laptop(env)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	st := openPG(t, dsn)
	// Notes sent before a replica listens never reach it: the tests
	// start deciding once both hear each other.
	for deadline := time.Now().Add(10 * time.Second); !st.Listening(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replica's store is not listening after 10s")
		}
	}
	core, err := app.New(cfg, nil, app.Deps{Store: st, Log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), MaintainEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
	})
	return &testCore{App: core, Store: st, Agent: agent}
}

// TestTwoReplicasOnePostgres sends the same webhook stream to two core
// processes sharing one database: every incident (here one alert each, in
// its own namespace) is dispatched exactly once.
func TestTwoReplicasOnePostgres(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	agent := agenttest.New(t, "platform-sre")
	a, b := replica(t, dsn, agent), replica(t, dsn, agent)
	srvA, srvB := startHTTP(t, a), startHTTP(t, b)

	const alerts, webhooks = 12, 120
	var wg sync.WaitGroup
	errs := make(chan string, 2*webhooks)
	for i := range webhooks {
		// Each webhook carries a sliding window of four alerts, the way
		// Alertmanager re-sends a group while it fires.
		var group []map[string]any
		for j := range 4 {
			k := (i/10 + j) % alerts
			group = append(group, alert(fmt.Sprintf("fp%02d", k), "KubePodCrashLooping", fmt.Sprintf("ns%02d", k), "firing"))
		}
		body := webhookBody(group...)
		for _, u := range []string{srvA, srvB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Post(u+"/api/v1/alerts", "application/json", bytesReader(body))
				if err != nil {
					errs <- err.Error()
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Sprintf("%s answered %d", u, resp.StatusCode)
				}
			}()
		}
		if i%10 == 9 {
			wg.Wait() // let windows overlap across batches, not all at once
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Queued alerts are dispatched as slots free up, by either replica.
	defer func() {
		if t.Failed() {
			for i := range alerts {
				fp := fmt.Sprintf("fp%02d", i)
				st, err := a.Store.GetAlertState(context.Background(), incidentKey("{}:{}", alert(fp, "KubePodCrashLooping", fmt.Sprintf("ns%02d", i), "firing")))
				t.Logf("%s runs=%d state=%+v err=%v", fp, agent.RunsFor(fp), st, err)
			}
			t.Logf("queued a=%d b=%d", a.Pipeline().Queued(), b.Pipeline().Queued())
		}
	}()
	waitFor(t, 60*time.Second, "every alert investigated", func() bool {
		a.WaitIdle()
		b.WaitIdle()
		a.Upkeep(context.Background())
		b.Upkeep(context.Background())
		return len(agent.Runs()) >= alerts && a.Pipeline().Queued()+b.Pipeline().Queued() == 0
	})
	a.WaitIdle()
	b.WaitIdle()
	for i := range alerts {
		fp := fmt.Sprintf("fp%02d", i)
		if n := agent.RunsFor(fp); n != 1 {
			t.Errorf("alert %s dispatched %d times, want exactly once", fp, n)
		}
	}
	if n := len(agent.Runs()); n != alerts {
		t.Fatalf("%d runs for %d alerts", n, alerts)
	}
	invs, _, err := a.Store.ListInvestigations(context.Background(), store.Page{Limit: 100})
	if err != nil || len(invs) != alerts {
		t.Fatalf("%d investigations recorded (%v), want %d", len(invs), err, alerts)
	}
}

// TestTwoReplicasCoalesceOneIncident: 400 crash-looping pods of one
// Deployment, their webhooks split between two replicas on one database
// and sent twice at once: one investigation, every other alert joined or
// deduped on it. Once each replica has heard the other's members, the
// 400 again (each half to the other replica) are deduped and 50 new pods
// split between them are joined.
func TestTwoReplicasCoalesceOneIncident(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	agent := agenttest.New(t, "platform-sre")
	gate := agent.Gate()
	a, b := replica(t, dsn, agent), replica(t, dsn, agent)
	urls := []string{startHTTP(t, a), startHTTP(t, b)}
	var pods []map[string]any
	for i := range 400 {
		pods = append(pods, podAlert("KubePodCrashLooping", "shop", podName("api", i), "", "warning"))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	decisions := map[string]int{}
	members := map[string]bool{} // dispatched or joined, on either replica
	inv := ""
	for round := range 2 {
		for half := range 2 {
			body := groupBody(fmt.Sprintf(`{}:{half="%d"}`, half), pods[half*200:(half+1)*200]...)
			wg.Go(func() {
				resp, err := http.Post(urls[(half+round)%2]+"/api/v1/alerts", "application/json", bytesReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				var ans answer
				if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
					t.Errorf("webhook: %d %v", resp.StatusCode, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, d := range ans.Decisions {
					decisions[d.Decision]++
					if d.Decision == "dispatched" || d.Decision == "joined" {
						members[d.Fingerprint], inv = true, d.InvestigationID
					}
				}
			})
		}
	}
	wg.Wait()
	if decisions["dispatched"] != 1 || decisions["joined"]+decisions["deduped"] != 799 {
		t.Fatalf("decisions %v: want one dispatched, the other 799 joined or deduped", decisions)
	}
	// A new pod joined on one replica before the other heard of the
	// investigation was deduped there; its repeat below joins.
	const key = "shop/Deployment/api"
	waitFor(t, 10*time.Second, "both replicas to know the investigation's members", func() bool {
		return a.Pipeline().Members(key, inv) == len(members) && b.Pipeline().Members(key, inv) == len(members)
	})
	for i := 400; i < 450; i++ {
		pods = append(pods, podAlert("KubePodCrashLooping", "shop", podName("api", i), "", "warning"))
	}
	again := map[string]int{}
	for half, u := range urls {
		ans := postGroup(t, u, fmt.Sprintf(`{}:{half="%d"}`, 1-half), append(pods[(1-half)*200:(2-half)*200], pods[400+half*25:425+half*25]...)...)
		for _, d := range ans.Decisions {
			again[d.Decision]++
			if d.Decision == "joined" && (d.InvestigationID != inv || !strings.Contains(d.Reason, "also firing: joined investigation "+inv+" of incident "+key)) {
				t.Fatalf("%s: joined %+v, want investigation %s of incident %s", u, d, inv, key)
			}
		}
	}
	if want := (map[string]int{"deduped": len(members), "joined": 450 - len(members)}); again["deduped"] != want["deduped"] || again["joined"] != want["joined"] || len(again) != 2 {
		t.Fatalf("the 400 again and 50 new, each half to the other replica: %v, want %v", again, want)
	}
	close(gate)
	a.WaitIdle()
	b.WaitIdle()
	if n := len(agent.Runs()); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	// Its end is heard too: neither replica keeps its members.
	waitFor(t, 10*time.Second, "both replicas to hear the investigation ended", func() bool {
		return a.Pipeline().Members(key, inv) == 0 && b.Pipeline().Members(key, inv) == 0
	})
	invs, _, err := a.Store.ListInvestigations(context.Background(), store.Page{Limit: 10})
	if err != nil || len(invs) != 1 || invs[0].Fingerprint != "shop/Deployment/api" {
		t.Fatalf("investigations %+v (%v), want one of incident shop/Deployment/api", invs, err)
	}
}

// TestTwoReplicasShareALostNode: a node's alert decided by replica A, the
// pods on it in ten namespaces sent to replica B: one investigation,
// every pod joined on B to A's node incident.
func TestTwoReplicasShareALostNode(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	agent := agenttest.New(t, "platform-sre")
	gate := agent.Gate()
	a, b := replica(t, dsn, agent), replica(t, dsn, agent)
	urlA, urlB := startHTTP(t, a), startHTTP(t, b)
	node := alert("node7-notready", "KubeNodeNotReady", "monitoring", "firing")
	node["labels"].(map[string]string)["node"] = "node-7"
	first := postGroup(t, urlA, `{}:{alertname="KubeNodeNotReady"}`, node)
	if len(first.Decisions) != 1 || first.Decisions[0].Decision != "dispatched" {
		t.Fatalf("node alert on A: %+v", first)
	}
	inv := first.Decisions[0].InvestigationID
	waitFor(t, 10*time.Second, "B to hear node-7 is lost and its investigation", func() bool {
		return b.Pipeline().NodeLost("", "node-7") && b.Pipeline().Members("node/node-7", inv) == 1
	})
	for i := range 10 {
		ns := fmt.Sprintf("team-%02d", i)
		ans := postGroup(t, urlB, fmt.Sprintf(`{}:{namespace=%q}`, ns),
			podAlert("KubePodNotReady", ns, podName("web", i), "node-7", "warning"),
			podAlert("KubePodNotReady", ns, podName("worker", i), "node-7", "critical"))
		for _, d := range ans.Decisions {
			if d.Decision != "joined" || d.InvestigationID != inv || !strings.Contains(d.Reason, "of incident node/node-7") {
				t.Fatalf("namespace %s on B: %+v, want joined to investigation %s of node/node-7", ns, d, inv)
			}
		}
	}
	// A repeat of a pod on A, once it has heard B's 20 joins, is deduped.
	waitFor(t, 10*time.Second, "A to hear B's joins", func() bool { return a.Pipeline().Members("node/node-7", inv) == 21 })
	if d := postGroup(t, urlA, `{}:{namespace="team-03"}`, podAlert("KubePodNotReady", "team-03", podName("web", 3), "node-7", "warning")).Decisions; d[0].Decision != "deduped" {
		t.Fatalf("repeat on A: %+v, want deduped", d)
	}
	close(gate)
	a.WaitIdle()
	b.WaitIdle()
	if n := len(agent.Runs()); n != 1 {
		t.Fatalf("%d investigations, want 1 (the node's)", n)
	}
}

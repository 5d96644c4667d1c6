package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/pkg/upgradetest"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

// TestMain runs the core itself when a test starts this binary as a child
// (KUBECREW_CORE_CHILD=1): the kill -9 test needs a real process to kill.
func TestMain(m *testing.M) {
	if os.Getenv("KUBECREW_CORE_CHILD") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// child is the core running as a process of its own.
type child = upgradetest.Process

// startChild starts this test binary as the core (TestMain).
func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	if env["AUTH_TOKEN"] == "" && env["AUTH_DISABLED"] == "" {
		env = maps.Clone(env)
		env["AUTH_DISABLED"] = "true" // the storms post without a token
	}
	return upgradetest.Start(t, os.Args[0], append([]string{"KUBECREW_CORE_CHILD=1"}, mapEnv(env)...), "core listening")
}

func mapEnv(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// tally is what the storm's answers said.
type tally struct {
	mu        sync.Mutex
	decided   int            // decisions answered
	changes   map[string]int // "decision fingerprint" → answered, for dispatched and resolved
	webhooks  int
	lastError error
}

// storm posts webhooks of 1–3 of the alerts, one in eight resolved, from
// workers goroutines until stop is closed (each finishes its webhook) or
// the core stops answering.
func storm(stop <-chan struct{}, addr string, fps []string, workers int, tl *tally) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; ; i += workers {
				select {
				case <-stop:
					return
				default:
				}
				var alerts []map[string]any
				for j := range 1 + i%3 {
					fp := fps[(i*7+j*13)%len(fps)]
					status := "firing"
					if (i+j)%8 == 0 {
						status = "resolved"
					}
					alerts = append(alerts, killAlert(fp, status))
				}
				ans, err := postAlerts(ctx, addr, alerts)
				tl.mu.Lock()
				if err != nil {
					tl.lastError = err
					tl.mu.Unlock()
					return
				}
				tl.webhooks++
				for _, d := range ans.Decisions {
					tl.decided++
					if d.Decision == store.DecisionDispatched || d.Decision == store.DecisionResolved {
						tl.changes[d.Decision+" "+d.Fingerprint]++
					}
				}
				tl.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func killAlert(fp, status string) map[string]any {
	endsAt := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		endsAt = "2026-11-30T12:30:00Z"
	}
	return map[string]any{
		"status": status, "fingerprint": fp,
		"labels":      map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "api-" + fp, "severity": "warning"},
		"annotations": map[string]string{"summary": "crash loop"}, "startsAt": "2026-11-30T11:00:00Z", "endsAt": endsAt,
		"generatorURL": "http://prom/graph",
	}
}

func postAlerts(ctx context.Context, addr string, alerts []map[string]any) (kapi.AlertsAnswer, error) {
	return postGroup(ctx, addr, "{}:{alertname=\"KubePodCrashLooping\"}", alerts)
}

// postGroup posts one Alertmanager group's webhook.
func postGroup(ctx context.Context, addr, groupKey string, alerts []map[string]any) (kapi.AlertsAnswer, error) {
	body, _ := json.Marshal(map[string]any{
		"version": "4", "receiver": "kubecrew", "status": "firing", "groupKey": groupKey, "alerts": alerts,
		"groupLabels": map[string]string{}, "commonLabels": map[string]string{}, "commonAnnotations": map[string]string{}, "externalURL": "http://am",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1/alerts", bytes.NewReader(body))
	if err != nil {
		return kapi.AlertsAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return kapi.AlertsAnswer{}, err
	}
	defer resp.Body.Close()
	var ans kapi.AlertsAnswer
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return ans, fmt.Errorf("webhook answered %d: %s", resp.StatusCode, b)
	}
	return ans, json.NewDecoder(resp.Body).Decode(&ans)
}

// dbDecisions lists every decision in the database.
func dbDecisions(t *testing.T, st store.CoreStore) []store.AlertDecision {
	t.Helper()
	var out []store.AlertDecision
	cur := ""
	for {
		ds, next, err := st.ListDecisions(context.Background(), store.Page{Limit: store.MaxLimit, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ds...)
		if next == "" {
			return out
		}
		cur = next
	}
}

// kill -9 during a storm loses no state change (every dispatch and resolve
// the core answered is in Postgres) and dispatches no alert twice after the
// restart; only repeat counters since the last flush may be lost, and a
// graceful stop loses none of them.
func TestKill9DuringStormLosesNoStateChange(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t, "kc")
	agent := agenttest.New(t, "platform-sre")
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  max_in_flight: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": url, "AGENT_PEERS": "platform-sre=" + agent.Server.URL, "ROUTES_FILE": routes,
		"DECISION_FLUSH_INTERVAL": "300ms"}
	fps := make([]string, 40)
	for i := range fps {
		fps[i] = fmt.Sprintf("storm%02d", i)
	}

	// Run 1: a storm, then kill -9 in the middle of it. Its backends are
	// named, to wait for them to end after the kill.
	const run1 = "kubecrew-kill-run1"
	env1 := maps.Clone(env)
	env1["DATABASE_URL"] = pgtest.WithApplicationName(t, url, run1)
	c1 := startChild(t, env1)
	t1 := &tally{changes: map[string]int{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { storm(stop, c1.Addr, fps, 4, t1); close(done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		t1.mu.Lock()
		n, err := t1.webhooks, t1.lastError
		t1.mu.Unlock()
		if err != nil {
			t.Fatalf("storm before the kill: %v\n%s", err, c1.Stderr())
		}
		if n >= 400 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d webhooks answered in 60s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c1.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c1.Exited
	close(stop)
	<-done
	// What the killed core had sent may still commit (a batch up to its
	// COMMIT, behind a lock): count once its backends have ended.
	pgtest.WaitBackendsGone(t, run1, 60*time.Second)

	st, err := store.OpenPostgres(context.Background(), url, nil, store.WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sum := func(ds []store.AlertDecision) (n int, changes map[string]int) {
		changes = map[string]int{}
		for _, d := range ds {
			n += d.Count
			if d.Decision == store.DecisionDispatched || d.Decision == store.DecisionResolved {
				changes[d.Decision+" "+d.Fingerprint] += d.Count
			}
		}
		return n, changes
	}
	after1, changes1 := sum(dbDecisions(t, st))
	for k, n := range t1.changes {
		if changes1[k] < n {
			t.Errorf("%s: answered %d time(s), %d in Postgres after kill -9: a state change was lost", k, n, changes1[k])
		}
	}
	// Decisions of webhooks in flight at the kill may be in Postgres
	// unanswered: at most 4 workers × 3 alerts.
	if after1 > t1.decided+12 {
		t.Errorf("%d decisions in Postgres, %d answered: repeats counted twice?", after1, t1.decided)
	}
	t.Logf("run 1: %d webhooks, %d decisions answered, %d in Postgres after kill -9 (repeat counters since the last flush lost)", t1.webhooks, t1.decided, after1)

	// Run 2: start again on the same database, storm, stop gracefully.
	c2 := startChild(t, env)
	t2 := &tally{changes: map[string]int{}}
	stop2 := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(stop2) })
	storm(stop2, c2.Addr, fps, 4, t2)
	if t2.webhooks == 0 {
		t.Fatalf("no webhook answered after the restart: %v\n%s", t2.lastError, c2.Stderr())
	}
	c2.Name = "restarted core"
	c2.Stop(t)
	all := dbDecisions(t, st)
	after2, _ := sum(all)
	if after2 != after1+t2.decided {
		t.Errorf("after a graceful stop Postgres counts %d decisions, want %d (%d before + %d answered): the shutdown flush lost some (last storm error: %v)",
			after2, after1+t2.decided, after1, t2.decided, t2.lastError)
	}
	for k := range t2.changes {
		if strings.HasPrefix(k, store.DecisionDispatched+" ") && changes1[k] > 0 {
			t.Errorf("%s after the restart: dispatched twice (cooldown 30m)", k)
		}
	}
	for _, fp := range fps {
		if n := agent.RunsFor(fp); n > 1 {
			t.Errorf("the agent ran %s %d times", fp, n)
		}
	}
	invs, _, err := st.ListInvestigations(context.Background(), store.Page{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, inv := range invs {
		if seen[inv.Fingerprint] {
			t.Errorf("%s investigated twice", inv.Fingerprint)
		}
		seen[inv.Fingerprint] = true
	}
	if len(seen) == 0 || len(agent.Runs()) == 0 {
		t.Fatalf("nothing dispatched: %d investigations, %d agent runs", len(seen), len(agent.Runs()))
	}
}

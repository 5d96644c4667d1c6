package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/pkg/upgradetest"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

// upgrade drives two cores, the previous version and this one, on one
// Postgres schema, and keeps what the test expects of every alert.
type upgrade struct {
	t     *testing.T
	agent *agenttest.Agent
	mu    sync.Mutex
	// dispatched counts dispatched decisions answered per alert, by both;
	// inv is the investigation of the last.
	dispatched map[string]int
	inv        map[string]string
}

// alert posts one alert, alone in its Alertmanager group (so it is its own
// incident in every version), to c and returns its decision; anything but
// 200 fails the test.
func (u *upgrade) alert(c *child, fp, status string) kapi.AlertDecision {
	u.t.Helper()
	ans, err := postGroup(context.Background(), c.Addr, `{}:{pod="api-`+fp+`"}`, []map[string]any{killAlert(fp, status)})
	if err != nil {
		u.t.Fatalf("%s %s to %s: %v\n%s", status, fp, c.Addr, err, c.Stderr())
	}
	if len(ans.Decisions) != 1 || ans.Decisions[0].Fingerprint != fp {
		u.t.Fatalf("%s %s to %s: decisions %+v", status, fp, c.Addr, ans.Decisions)
	}
	d := ans.Decisions[0]
	if d.Decision == store.DecisionDispatched {
		u.mu.Lock()
		u.dispatched[fp]++
		u.inv[fp] = d.InvestigationID
		u.mu.Unlock()
	}
	return d
}

// keepPosting posts the alerts to c in turn until stop is closed, and
// fails on the first answer that is not 200 (or if none was answered).
func (u *upgrade) keepPosting(c *child, fps []string, stop <-chan struct{}) error {
	n := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			if n == 0 {
				return fmt.Errorf("no webhook answered")
			}
			u.t.Logf("the old core answered %d webhooks while the new one started", n)
			return nil
		default:
		}
		fp := fps[i%len(fps)]
		ans, err := postGroup(context.Background(), c.Addr, `{}:{pod="api-`+fp+`"}`, []map[string]any{killAlert(fp, "firing")})
		if err != nil {
			return fmt.Errorf("webhook %d (%s): %w", n+1, fp, err)
		}
		n++
		for _, d := range ans.Decisions {
			if d.Decision == store.DecisionDispatched {
				u.mu.Lock()
				u.dispatched[d.Fingerprint]++
				u.mu.Unlock()
			}
		}
	}
}

// expect posts each alert to c and checks its decision is one of want.
func (u *upgrade) expect(c *child, fps []string, status string, want ...string) {
	u.t.Helper()
	for _, fp := range fps {
		if d := u.alert(c, fp, status); !slices.Contains(want, d.Decision) {
			u.t.Errorf("%s %s to the %s core: %s (%s), want %s", status, fp, c.Name, d.Decision, d.Reason, strings.Join(want, " or "))
		}
	}
}

// list pages through GET path on c.
func list[T any](t *testing.T, c *child, path string) []T {
	t.Helper()
	var out []T
	cursor := ""
	for {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		resp, err := http.Get(fmt.Sprintf("http://%s%s%slimit=%d&cursor=%s", c.Addr, path, sep, store.MaxLimit, cursor))
		if err != nil {
			t.Fatalf("GET %s on the %s core: %v", path, c.Name, err)
		}
		var page struct {
			Items      []T    `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET %s on the %s core: %d %v", path, c.Name, resp.StatusCode, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// decision is a row of GET /api/v1/alerts, in every version.
type decision struct {
	ID              string `json:"id"`
	Fingerprint     string `json:"fingerprint"`
	Decision        string `json:"decision"`
	InvestigationID string `json:"investigation_id"`
}

// seen is what one core lists: decisions by id, investigations by id.
type seen struct {
	decisions map[string]decision
	invs      map[string]kapi.Investigation
}

func (u *upgrade) read(c *child) seen {
	u.t.Helper()
	s := seen{decisions: map[string]decision{}, invs: map[string]kapi.Investigation{}}
	for _, d := range list[decision](u.t, c, "/api/v1/alerts") {
		s.decisions[d.ID] = d
	}
	for _, i := range list[kapi.Investigation](u.t, c, "/api/v1/investigations") {
		s.invs[i.ID] = i
	}
	return s
}

// keeps fails unless c lists every decision and investigation of before,
// unchanged but for an investigation's end.
func (u *upgrade) keeps(c *child, before seen, what string) {
	u.t.Helper()
	now := u.read(c)
	for id, d := range before.decisions {
		if got, ok := now.decisions[id]; !ok || got != d {
			u.t.Errorf("the %s core lists decision %s as %+v, want %+v (%s)", c.Name, id, got, d, what)
		}
	}
	for id, i := range before.invs {
		got, ok := now.invs[id]
		if !ok || got.Fingerprint != i.Fingerprint || got.Agent != i.Agent || (i.Status != "running" && got.Status != i.Status) {
			u.t.Errorf("the %s core lists investigation %s as %+v, want %+v (%s)", c.Name, id, got, i, what)
		}
	}
}

// eventually polls cond for up to a minute; say, if given, tells what it
// last saw.
func eventually(t *testing.T, what string, cond func() bool, say ...func() string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			var saw string
			for _, f := range say {
				saw += "\n" + f()
			}
			t.Fatalf("not within a minute: %s%s", what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fingerprints(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

// TestUpgradeSideBySide: the previous version (hack/upgrade/previous, built
// from this repository's history) fills a schema through its API; this
// version starts on the same schema and migrates it while the old one
// serves; both answer, each decides from and lists what the other wrote,
// an incident is dispatched once across both, an old core restarted on
// the migrated schema starts, and this version alone keeps everything
// (docs/ARCHITECTURE.md, "Upgrades").
func TestUpgradeSideBySide(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t, "kc")
	root := upgradetest.Root(t, ".")
	prev, err := upgradetest.Commit(root)
	if err != nil {
		t.Fatal(err)
	}
	oldBin := upgradetest.Build(t, root, prev, "services/core")
	u := &upgrade{t: t, agent: agenttest.New(t, "platform-sre"), dispatched: map[string]int{}, inv: map[string]string{}}
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  max_in_flight: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABASE_URL=" + url, "AGENT_PEERS=platform-sre=" + u.agent.Server.URL, "ROUTES_FILE=" + routes}
	startOld := func() *child {
		c := upgradetest.Start(t, oldBin, env, "core listening")
		c.Name = "old"
		return c
	}

	// 1. The previous version alone, filled as in production.
	old := startOld()
	done, slow := fingerprints("up", 0, 24), fingerprints("up", 24, 30)
	u.expect(old, done, "firing", store.DecisionDispatched)
	eventually(t, "the old core's investigations completed", func() bool {
		invs := u.read(old).invs
		return !slices.ContainsFunc(done, func(fp string) bool { return invs[u.inv[fp]].Status != "completed" })
	})
	gate := u.agent.Gate() // the slow ones stay in flight across the upgrade
	u.expect(old, slow, "firing", store.DecisionDispatched)
	u.expect(old, done, "firing", store.DecisionCooldown)
	u.expect(old, slow, "firing", store.DecisionDeduped)
	u.expect(old, done[:6], "resolved", store.DecisionResolved)
	before := u.read(old)
	oldVersion := upgradetest.SchemaVersion(t, url)
	t.Logf("the previous version (%s) wrote schema version %d: %d decisions, %d investigations", prev[:12], oldVersion, len(before.decisions), len(before.invs))

	// 2. This version starts on the same schema, and migrates it, while
	// the old one serves webhooks.
	stopHooks := make(chan struct{})
	hooks := make(chan error, 1)
	go func() { hooks <- u.keepPosting(old, fingerprints("mg", 0, 10), stopHooks) }()
	cur := startChild(t, map[string]string{"DATABASE_URL": url, "AGENT_PEERS": "platform-sre=" + u.agent.Server.URL, "ROUTES_FILE": routes})
	cur.Name = "new"
	close(stopHooks)
	if err := <-hooks; err != nil {
		t.Fatalf("the old core while the new one started and migrated: %v", err)
	}
	newest := upgradetest.NewestMigration(t, root)
	if v := upgradetest.SchemaVersion(t, url); v != newest {
		t.Fatalf("after the new core started the schema is at %d, want %d", v, newest)
	}
	if oldVersion < newest && !strings.Contains(cur.Stderr(), `"msg":"postgres migration applied"`) {
		t.Fatalf("the schema went from %d to %d, but the new core did not log a migration:\n%s", oldVersion, newest, cur.Stderr())
	}
	t.Logf("this version migrated the schema from %d to %d while the old core served", oldVersion, newest)
	u.sideBySide(old, cur, before, done, slow, gate)

	// 3. An old core restarted on the migrated schema (a rollback, or a
	// crash while the rollout runs) starts and serves.
	old.Stop(t)
	old = startOld()
	u.expect(old, done[6:], "firing", store.DecisionCooldown)
	u.expect(old, fingerprints("re", 0, 4), "firing", store.DecisionDispatched)
	u.expect(cur, fingerprints("re", 0, 4), "firing", store.DecisionDeduped, store.DecisionCooldown)
	u.keeps(cur, u.read(old), "what the restarted old core lists")

	// 4. The old one stops; this version alone keeps everything.
	all := u.read(old)
	old.Stop(t)
	u.expect(cur, fingerprints("al", 0, 4), "firing", store.DecisionDispatched)
	u.expect(cur, done[6:], "firing", store.DecisionCooldown)
	u.keeps(cur, all, "after the old core stopped")
	for fp, n := range u.dispatched {
		if n != 1 || u.agent.RunsFor(fp) != 1 {
			t.Errorf("%s: %d dispatched decisions, %d agent runs, want 1 of each", fp, n, u.agent.RunsFor(fp))
		}
	}
}

// sideBySide is the overlap: both cores serve one schema.
func (u *upgrade) sideBySide(old, cur *child, before seen, done, slow []string, gate chan struct{}) {
	t := u.t
	// Each decides from what the other wrote.
	u.keeps(cur, before, "what the old core wrote")
	firing := map[string]bool{} // of the alerts filled in before (not those posted while it started)
	for _, d := range list[decision](t, cur, "/api/v1/alerts?state=firing") {
		if strings.HasPrefix(d.Fingerprint, "up") {
			firing[d.Fingerprint] = true
		}
	}
	for _, fp := range append(slices.Clone(done), slow...) {
		if want := !slices.Contains(done[:6], fp); firing[fp] != want || len(firing) != len(done)+len(slow)-6 {
			t.Errorf("the new core lists %d alerts firing, %s firing: %v, want %v (as the old core left them)", len(firing), fp, firing[fp], want)
		}
	}
	u.expect(cur, done[6:], "firing", store.DecisionCooldown)
	u.expect(cur, slow, "firing", store.DecisionDeduped)
	mine := fingerprints("nw", 0, 6)
	u.expect(cur, mine, "firing", store.DecisionDispatched)
	u.expect(old, mine, "firing", store.DecisionDeduped, store.DecisionCooldown)
	u.expect(old, done[:6], "firing", store.DecisionCooldown) // resolved, firing again within the cooldown
	u.expect(cur, done[:6], "firing", store.DecisionCooldown)
	u.keeps(old, u.read(cur), "what the new core lists")

	// Both at once, each alert to both: dispatched once across the two.
	both := fingerprints("bo", 0, 20)
	var wg sync.WaitGroup
	for _, c := range []*child{old, cur} {
		wg.Go(func() {
			u.expect(c, both, "firing", store.DecisionDispatched, store.DecisionDeduped, store.DecisionCooldown)
		})
	}
	wg.Wait()

	// The old core's slow investigations end while the new one runs: both
	// see them completed, and the new core decides cooldown from it.
	close(gate)
	var last []string
	eventually(t, "the slow investigations completed, seen by the new core", func() bool {
		last = last[:0]
		invs := u.read(cur).invs
		for _, fp := range slow {
			if i := invs[u.inv[fp]]; i.Status != "completed" {
				last = append(last, fmt.Sprintf("%s: investigation %q %q", fp, u.inv[fp], i.Status))
			}
		}
		return len(last) == 0
	}, func() string { return strings.Join(last, ", ") })
	// The new core remembers them in flight until it hears the old one's
	// write (LISTEN, within milliseconds): a repeat meanwhile is deduped.
	for _, fp := range slow {
		eventually(t, fp+" decided cooldown by the new core", func() bool { return u.alert(cur, fp, "firing").Decision == store.DecisionCooldown })
	}
	u.expect(old, slow, "firing", store.DecisionCooldown)
	for _, c := range []*child{old, cur} {
		resp, err := http.Get("http://" + c.Addr + "/ready")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the %s core is not ready beside the other: %v %v", c.Name, err, resp)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if strings.Contains(old.Stderr(), `"level":"error"`) {
		t.Errorf("the old core logged errors beside the new one:\n%s", old.Stderr())
	}
}

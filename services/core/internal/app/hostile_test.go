package app_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/httpauth/authtest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
)

// hostileStores are the stores the core's hostile pass runs on: memory,
// Postgres (skipped without one, or failed when CI=true), and a Postgres
// that is down (the fall-open store, as main wires it).
func hostileStores(t *testing.T) map[string]func(t *testing.T) (store.CoreStore, []string) {
	return map[string]func(t *testing.T) (store.CoreStore, []string){
		"memory": func(*testing.T) (store.CoreStore, []string) { return store.NewMemory(time.Now), nil },
		"postgres": func(t *testing.T) (store.CoreStore, []string) {
			dsn := pgSchema(t)
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			return openPG(t, dsn), []string{u.Host, u.Query().Get("search_path")}
		},
		"store down": func(t *testing.T) (store.CoreStore, []string) {
			dsn, addr := pgtest.Refusing(t)
			sw, err := store.Open(context.Background(), dsn, zap.NewNop(), store.WithConnectTimeout(time.Second),
				store.WithOpTimeout(time.Second), store.WithRetryInterval(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sw.Close)
			if sw.Usable() == nil {
				t.Fatal("the store is up")
			}
			return sw, []string{"Pl4ntedDbPass", addr}
		},
	}
}

func hostileCore(t *testing.T, st store.CoreStore, secrets []string) (*testCore, authtest.HostileOptions) {
	t.Helper()
	c := newCore(t, coreOpts{store: st, quiet: true, env: map[string]string{
		"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret", "ALERT_WEBHOOK_MAX_BYTES": "1Mi"}})
	return c, authtest.HostileOptions{
		Options: authtest.Options{URL: c.URL, Routes: c.Handler().(chi.Routes),
			// The static file a page loads (a missing one is the file
			// server's plain 404).
			Params: [][2]string{{"{id}", "nope"}, {"{slug}", "platform-sre"}, {"*", "dash.css"}},
			Open:   map[string]bool{"/health": true, "/ready": true, "/metrics": true, "/login": true, "/static/*": true},
			Full:   "full-s3cret", Read: "read-s3cret"},
		Handler: c.Handler(),
		Pages: map[string]bool{"/": true, "/alerts": true, "/investigations": true, "/investigations/{id}": true,
			"/agents": true, "/agents/{slug}": true, "/login": true, "/static/*": true},
		Secrets: append(secrets, "full-s3cret", "read-s3cret"),
		NoBody:  map[string]bool{"/login": true},
		Texts: map[string]string{
			"/api/v1/agents/{slug}/run": `{"task":"%s"}`,
			"/api/v1/alerts": `{"version":"4","status":"firing","receiver":"core","groupKey":"g","alerts":[{"status":"firing",` +
				`"fingerprint":"hostile","labels":{"alertname":"%s","namespace":"hostile"},"startsAt":"2026-11-30T11:00:00Z"}]}`,
		},
		MaxBody: 1 << 20,
		Stored: func() int {
			ds, _, err := st.ListDecisions(context.Background(), store.Page{Limit: 1000})
			if err != nil {
				t.Errorf("list decisions: %v", err)
			}
			return len(ds) + len(c.Agent.Runs())
		},
	}
}

// TestHostileCoreMatrix: every route of the core × every credential
// variant, on each store (docs/MANUAL.md, "Hostile pass").
func TestHostileCoreMatrix(t *testing.T) {
	for name, open := range hostileStores(t) {
		t.Run(name, func(t *testing.T) {
			st, secrets := open(t)
			_, o := hostileCore(t, st, secrets)
			for round := range authtest.Rounds() {
				t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { authtest.HostileMatrix(t, o) })
			}
		})
	}
}

// TestHostileCoreBodies: every write route of the core × every bad body,
// on each store: a 4xx with a JSON error, nothing stored.
func TestHostileCoreBodies(t *testing.T) {
	for name, open := range hostileStores(t) {
		t.Run(name, func(t *testing.T) {
			st, secrets := open(t)
			_, o := hostileCore(t, st, secrets)
			for round := range authtest.Rounds() {
				t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { authtest.HostileBodies(t, o) })
			}
		})
	}
}

package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/httpauth/authtest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// hostileAgent starts an agent for the hostile pass on store ("memory",
// "postgres" or "store down": DATABASE_URL at a server that hangs up).
func hostileAgent(t *testing.T, st string) authtest.HostileOptions {
	t.Helper()
	env := map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill",
		"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"}
	secrets := []string{"full-s3cret", "read-s3cret"}
	switch st {
	case "postgres":
		env["DATABASE_URL"] = pgtest.Schema(t, "hostile")
		u, err := url.Parse(env["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, u.Host, u.Query().Get("search_path"))
	case "store down":
		dsn, addr := pgtest.Refusing(t)
		env["DATABASE_URL"] = dsn
		secrets = append(secrets, "Pl4ntedDbPass", addr)
	}
	a := start(t, env)
	if sw, ok := a.app.Store.(*store.Switch); st == "store down" && (!ok || sw.Usable() == nil) {
		t.Fatalf("the store is up: %T", a.app.Store)
	}
	return authtest.HostileOptions{
		Options: authtest.Options{URL: a.url, Routes: a.app.Server.Router(),
			Params: [][2]string{{"{id}", "nope"}}, Open: server.OpenPaths, Full: "full-s3cret", Read: "read-s3cret"},
		Handler: a.app.Server,
		// A2A is JSON-RPC; /mcp is the MCP SDK's transport; POST /pulse
		// runs the due task and reads no body.
		Protocol: map[string]string{"/invoke": "jsonrpc", "/mcp": "mcp"},
		NoBody:   map[string]bool{"/pulse": true},
		Texts:    map[string]string{"/run": `{"task":"%s"}`},
		Secrets:  secrets,
		MaxBody:  server.MaxBodyBytes,
		Stored: func() int {
			code, b := do(t, http.MethodGet, a.url+"/runs?limit=100", "", "Authorization", "Bearer full-s3cret")
			var runs struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(b, &runs); code != http.StatusOK || err != nil {
				t.Errorf("GET /runs = %d %s", code, b)
			}
			return len(runs.Items)
		},
	}
}

var hostileStores = []string{"memory", "postgres", "store down"}

// TestHostileAgentMatrix: every route of the agent × every credential
// variant, on each store (docs/MANUAL.md, "Hostile pass").
func TestHostileAgentMatrix(t *testing.T) {
	for _, st := range hostileStores {
		t.Run(st, func(t *testing.T) {
			o := hostileAgent(t, st)
			for round := range authtest.Rounds() {
				t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { authtest.HostileMatrix(t, o) })
			}
		})
	}
}

// TestHostileAgentBodies: every write route of the agent × every bad
// body, on each store: a 4xx with a JSON error, nothing stored.
func TestHostileAgentBodies(t *testing.T) {
	for _, st := range hostileStores {
		t.Run(st, func(t *testing.T) {
			o := hostileAgent(t, st)
			for round := range authtest.Rounds() {
				t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { authtest.HostileBodies(t, o) })
			}
		})
	}
}

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/logging/logtest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// TestPlantedCredentialsNeverLeaveTheCore (docs/MANUAL.md, "Redaction"): the
// agent's URL carries credentials in its userinfo and query and the agent
// is down; the secret settings carry more (a webhook's path). The failed
// investigation's error is read back from every route and page that shows
// it, the log and the Postgres investigations table: no credential. Issue
// #31: the dispatch error quoted the URL whole into investigations.error,
// the chain, the report and the dashboard.
func TestPlantedCredentialsNeverLeaveTheCore(t *testing.T) {
	planted := []string{"PLANTED-user-7c1", "PLANTED-pass-8d2", "PLANTED-query-9e3", "PLANTED-hookpath-1a5b6c7d8e9f"}
	down := httptest.NewServer(http.NotFoundHandler())
	downHost := down.Listener.Addr().String()
	down.Close()
	dsn := pgSchema(t)
	env := map[string]string{
		"AGENT_PEERS":        fmt.Sprintf("platform-sre=http://PLANTED-user-7c1:PLANTED-pass-8d2@%s/a?token=PLANTED-query-9e3", downHost),
		"PEER_URL_TEMPLATE":  "http://127.0.0.1:1/{slug}",
		"AGENT_CALL_TIMEOUT": "10s",
		"AUTH_TOKEN":         "leak-test-token",
		"REPORT_WEBHOOK_URL": "http://" + downHost + "/hooks/PLANTED-hookpath-1a5b6c7d8e9f",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	st := openPG(t, dsn)
	core, err := app.New(cfg, nil, app.Deps{Store: st, Log: logging.New(&logs, zapcore.DebugLevel), MaintainEvery: time.Hour,
		NotifyRetry: []time.Duration{time.Millisecond}, NotifyPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = core.Shutdown(ctx)
	})
	bearer := []string{"Authorization", "Bearer leak-test-token"}
	a := alert("fp-leak", "KubePodCrashLooping", "shop", "firing")
	if code, b, _ := do(t, "POST", srv.URL+"/api/v1/alerts", webhookBody(a), bearer...); code != http.StatusOK {
		t.Fatalf("webhook = %d %s", code, b)
	}
	var inv store.Investigation
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		invs, _, err := st.ListInvestigations(context.Background(), store.Page{})
		if err == nil && len(invs) == 1 && invs[0].FinishedAt != nil {
			inv = invs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no finished investigation after 10s: %+v %v", invs, err)
		}
	}
	if inv.Error == "" {
		t.Fatalf("the investigation did not fail on the agent: %+v", inv)
	}
	var seen []string
	for _, p := range []string{"/api/v1/investigations", "/api/v1/investigations/" + inv.ID, "/api/v1/investigations/" + inv.ID + "/chain",
		"/api/v1/investigations/" + inv.ID + "/report", "/api/v1/agents", "/api/v1/audit", "/api/v1/prs", "/api/v1/alerts",
		"/api/v1/findings/lifecycle", "/api/v1/actions", "/ready", "/info"} {
		code, b, _ := do(t, "GET", srv.URL+p, nil, bearer...)
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			t.Fatalf("GET %s = %d: the token did not open it, so nothing was read", p, code)
		}
		seen = append(seen, fmt.Sprintf("GET %s = %d %s", p, code, b))
	}
	for _, p := range []string{"/", "/investigations", "/investigations/" + inv.ID, "/agents", "/agents/platform-sre", "/alerts"} {
		code, b, _ := do(t, "GET", srv.URL+p, nil, append([]string{"Accept", "text/html"}, bearer...)...)
		seen = append(seen, fmt.Sprintf("page %s = %d %s", p, code, b))
	}
	code, b, _ := do(t, "POST", srv.URL+"/api/v1/agents/platform-sre/run", []byte(`{"task":"look"}`), bearer...)
	seen = append(seen, fmt.Sprintf("POST run = %d %s", code, b))
	code, b, _ = do(t, "GET", srv.URL+"/ready", nil) // the public answer, without a token
	seen = append(seen, fmt.Sprintf("GET /ready (no token) = %d %s", code, b))
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var row string
	if err := conn.QueryRow(context.Background(), "SELECT row_to_json(i)::text FROM investigations i WHERE id = $1", inv.ID).Scan(&row); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, row, logs.String())
	for _, s := range seen {
		for _, p := range planted {
			if strings.Contains(s, p) {
				t.Errorf("%s leaks in:\n%.1500s", p, s)
			}
		}
	}
}

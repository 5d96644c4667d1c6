package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sashabaranov/go-openai"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/logging/logtest"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// planted are the credentials TestPlantedCredentialsNeverLeave puts in
// every URL and secret setting: none may be read back anywhere.
var planted = []string{"PLANTED-user-7c1", "PLANTED-pass-8d2", "PLANTED-query-9e3", "PLANTED-apikey-0f4",
	"PLANTED-hookpath-1a5b6c7d8e9f", "PLANTED-authtoken-2b6"}

// TestPlantedCredentialsNeverLeave (docs/MANUAL.md, "Redaction"): with credentials
// in LLM_BASE_URL's userinfo and query, in the API key and in the secret
// settings (a webhook's path, the token), and the model endpoint down or
// up and quoting them back, no route, trace, report, log line or Postgres
// text column of the run shows one. Issue #31: the model client's error
// text quoted the endpoint's URL whole, and /ready, the run's error,
// trace and report and the runs table showed it.
func TestPlantedCredentialsNeverLeave(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downHost := down.Listener.Addr().String()
	down.Close()
	echo := llmtest.NewPolicyServer(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.APIError(http.StatusUnauthorized, "key PLANTED-apikey-0f4 refused for http://PLANTED-user-7c1:PLANTED-pass-8d2@model/v1?api-key=PLANTED-query-9e3")
	})
	t.Cleanup(echo.Close)
	upHost := strings.TrimPrefix(strings.TrimPrefix(echo.URL(), "http://"), "https://")
	upHost, _, _ = strings.Cut(upHost, "/")
	for _, tc := range []struct{ name, host string }{{"endpoint down", downHost}, {"endpoint up, quoting them", upHost}} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.Schema(t, "leak")
			env := map[string]string{
				"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill", "AGENT_MODEL": "test-model",
				"LLM_BASE_URL":       fmt.Sprintf("http://PLANTED-user-7c1:PLANTED-pass-8d2@%s/v1?api-key=PLANTED-query-9e3", tc.host),
				"LLM_API_KEY":        "PLANTED-apikey-0f4",
				"REPORT_WEBHOOK_URL": "http://" + downHost + "/hooks/PLANTED-hookpath-1a5b6c7d8e9f",
				"AUTH_TOKEN":         "PLANTED-authtoken-2b6", "READY_REQUIRE": "model",
				"LLM_TIMEOUT": "3s", "SYNTHESIS_TIMEOUT": "2s", "DATABASE_URL": dsn,
			}
			var logs logtest.Buffer
			a := startLogged(t, env, &logs)
			auth := []string{"Authorization", "Bearer PLANTED-authtoken-2b6"}
			var seen []string
			read := func(method, path, body string, hdr ...string) []byte {
				code, b := do(t, method, a.url+path, body, hdr...)
				seen = append(seen, fmt.Sprintf("%s %s = %d %s", method, path, code, b))
				return b
			}
			read("GET", "/ready", "")
			read("GET", "/ready", "", auth...)
			read("GET", "/info", "", auth...)
			var res struct {
				RunID string `json:"run_id"`
				Error string `json:"error"`
			}
			_ = json.Unmarshal(read("POST", "/run", `{"task":"review the API"}`, auth...), &res)
			if res.RunID == "" || res.Error == "" {
				t.Fatalf("the run did not fail on the model: %s", seen[len(seen)-1])
			}
			for _, p := range []string{"/runs/" + res.RunID, "/runs/" + res.RunID + "/trace", "/runs/" + res.RunID + "/report", "/runs"} {
				read("GET", p, "", auth...)
			}
			read("POST", "/run", `{"task":`, auth...) // a bad body's error answer
			seen = append(seen, postgresText(t, dsn, res.RunID)...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = a.app.Shutdown(ctx)
			seen = append(seen, logs.String())
			for _, s := range seen {
				for _, p := range planted {
					if strings.Contains(s, p) {
						t.Errorf("%s leaks in:\n%.2000s", p, s)
					}
				}
			}
		})
	}
}

// postgresText is every text column of the run's rows (runs, run_events).
func postgresText(t *testing.T, dsn, runID string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out []string
	for _, q := range []string{
		"SELECT row_to_json(r)::text FROM runs r WHERE id = $1",
		"SELECT row_to_json(e)::text FROM run_events e WHERE run_id = $1",
	} {
		rows, err := conn.Query(ctx, q, runID)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n := 0
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
			n++
		}
		rows.Close()
		if n == 0 {
			t.Errorf("%s: no rows for run %s", q, runID)
		}
	}
	return out
}

// startLogged is start with the binary's logger writing to logs.
func startLogged(t *testing.T, env map[string]string, logs *logtest.Buffer) *agent {
	t.Helper()
	cfg, err := config.Load(envOf(env), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{Log: logging.New(logs, zapcore.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		srv.Close()
	})
	return &agent{app: a, url: srv.URL}
}

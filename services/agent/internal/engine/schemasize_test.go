package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// MaxToolSchemaChars bounds the tool schemas each shipped persona sends
// with every model call, beside MaxPromptChars (docs/MANUAL.md, "Model cost").
const MaxToolSchemaChars = 8000

// Every shipped persona, built as `make run` builds it (its agent.env, its
// tool providers, the A2A verbs), sends at most MaxToolSchemaChars of tool
// schemas: the "tools" array of the chat request exactly as it reaches the
// scripted model server.
func TestToolSchemaSize(t *testing.T) {
	for _, info := range persona.All {
		t.Run(info.Name, func(t *testing.T) {
			raw := sentTools(t, strings.ToLower(info.Name))
			var each []json.RawMessage
			if err := json.Unmarshal(raw, &each); err != nil || len(each) == 0 {
				t.Fatalf("the request carries no tools (%v): %.200s", err, raw)
			}
			sort.Slice(each, func(i, j int) bool { return len(each[i]) > len(each[j]) })
			var names []string
			for _, e := range each {
				var s struct {
					Function struct{ Name string } `json:"function"`
				}
				_ = json.Unmarshal(e, &s)
				names = append(names, s.Function.Name+" "+itoa(len(e)))
			}
			if n := len(raw); n > MaxToolSchemaChars {
				t.Errorf("%s's %d tool schemas are %d characters, over %d; by size: %s", info.Name, len(each), n, MaxToolSchemaChars, strings.Join(names, ", "))
			} else {
				t.Logf("%s: %d tools, %d characters; by size: %s", info.Name, len(each), n, strings.Join(names, ", "))
			}
		})
	}
}

// sentTools starts the persona's agent with its shipped settings and a
// scripted model, asks it one question, and returns the "tools" array of
// the chat request as sent.
func sentTools(t *testing.T, name string) json.RawMessage {
	t.Helper()
	srv := llmtest.NewServer(t, llmtest.Text("hello"))
	env := map[string]string{"AGENT_PERSONA": name, "LLM_BASE_URL": srv.URL(), "AGENT_MODEL": "test-model",
		"LLM_TIMEOUT": "5s", "SYNTHESIS_TIMEOUT": "2s", "KUBECONFIG": "/nonexistent", "AUTH_TOKEN": "schema-token"}
	cfg, err := config.Load(func(k string) string { return env[k] }, app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		hs.Close()
	})
	// The write token: an interactive run, sent every tool.
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/run", strings.NewReader(`{"task":"hello"}`))
	req.Header.Set("Authorization", "Bearer schema-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatalf("POST /run = %d and no model call", resp.StatusCode)
	}
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Tools
}

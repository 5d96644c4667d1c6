package app_test

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// POST /run's context takes any JSON value: numbers, booleans and objects
// reach the run (and the prompt) as their compact JSON text; a context that
// is not an object is refused saying what to send.
func TestRunContextTakesJSONValues(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("noted"), llmtest.Text("{}"))
	a := start(t, modelEnv(srv, "ada"))
	code, body := do(t, "POST", a.url+"/run", `{"task":"review the api","context":{"namespace":"shop","replicas":3,"canary":true,"labels":{"app":"api"}}}`)
	if code != 200 {
		t.Fatalf("run = %d %s", code, body)
	}
	sys := srv.Requests()[0].Request.Messages[0].Content
	for _, want := range []string{"- namespace: shop", "- replicas: 3", "- canary: true", `- labels: {"app":"api"}`} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	code, body = do(t, "POST", a.url+"/run", `{"task":"t","context":"shop"}`)
	if code != 400 || !strings.Contains(string(body), "context must be a JSON object of names to values") {
		t.Errorf("string context = %d %s", code, body)
	}
}

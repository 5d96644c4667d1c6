package app_test

import (
	"encoding/json"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// The agent caps each answer on the wire: max_tokens is
// AGENT_MAX_COMPLETION_TOKENS, by default AGENT_CONTEXT_TOKENS/8, and
// AGENT_MAX_COMPLETION_TOKENS=0 sends none.
func TestModelRequestsCarryTheAnswerCap(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want string // max_tokens on the wire, "" for absent
	}{
		{nil, "4000"},
		{map[string]string{"AGENT_CONTEXT_TOKENS": "16000"}, "2000"},
		{map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "1234"}, "1234"},
		{map[string]string{"AGENT_MAX_COMPLETION_TOKENS": "0"}, ""},
	} {
		srv := llmtest.NewServer(t, llmtest.Text("hello"))
		env := modelEnv(srv, "ada")
		for k, v := range tc.set {
			env[k] = v
		}
		a := start(t, env)
		if code, body := do(t, "POST", a.url+"/run", `{"task":"hello"}`); code != 200 {
			t.Fatalf("%v: run = %d %s", tc.set, code, body)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(srv.Requests()[0].Raw, &raw); err != nil {
			t.Fatal(err)
		}
		if got := string(raw["max_tokens"]); got != tc.want || raw["max_completion_tokens"] != nil {
			t.Errorf("%v: max_tokens %q max_completion_tokens %s, want %q", tc.set, got, raw["max_completion_tokens"], tc.want)
		}
	}
}

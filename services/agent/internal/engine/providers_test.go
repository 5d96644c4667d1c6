package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// lookFirst is a tool call before the answer: a run that used a tool gets
// the synthesis pass.
var lookFirst = llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"look"}`})

var healthyReport = llmtest.JSON(map[string]any{"healthy": true, "findings": []any{}, "verdict": "healthy", "summary": "fine"})

// Reasoning text — in reasoning_content, in Ollama's or new vLLM's
// reasoning field, inline between <think> tags, or before a lone </think>
// — is kept in the trace and never in the answer or in what is sent back.
func TestReasoningStrippedFromAnswersKeptInTrace(t *testing.T) {
	tests := []struct {
		provider, answer, reasoning string
	}{
		{"ollama_think_inline", "The echo said hello.", "The user asked me to say hello"},
		{"vllm_r1_unopened_think", "The echo said hello.", "Okay, the user wants a summary"},
		{"ollama_reasoning", "The echo said hello.", "The tool answered 'echo: hello'"},
		{"llamacpp_reasoning_content", "The echo said hello.", "Echo returned hello"},
		{"vllm_reasoning_content", "web in shop is OOMKilled: raise its memory limit.", "The pod web-7c9 in shop restarted 14 times"},
	}
	for _, tc := range tests {
		t.Run(tc.provider, func(t *testing.T) {
			r := newRig(t, rigOpts{}, llmtest.Provider("vllm_reasoning_tool_call"), llmtest.Provider(tc.provider), healthyReport)
			res := r.run(t, api.RunRequest{Task: "say hello"})
			if res.Status != api.StatusCompleted || res.Answer != tc.answer {
				t.Fatalf("answer = %q (status %s), want %q", res.Answer, res.Status, tc.answer)
			}
			resps := eventsOf(r.events(t, res.RunID), "llm_response")
			if len(resps) != 2 || !strings.HasPrefix(resps[0]["reasoning"].(string), "I should echo first") ||
				!strings.Contains(resps[1]["reasoning"].(string), tc.reasoning) || strings.Contains(resps[1]["content"].(string), "think") {
				t.Errorf("llm_response events = %v", resps)
			}
			reqs := r.llm.Requests()
			for _, rec := range reqs[1:] {
				if raw := string(rec.Raw); strings.Contains(raw, "reasoning") || strings.Contains(raw, "I should echo first") || strings.Contains(raw, "<think>") {
					t.Errorf("a request carried reasoning back: %.400s", raw)
				}
			}
			// The tool call came through vLLM's id and format and ran.
			if tr := eventsOf(r.events(t, res.RunID), "tool_result"); len(tr) != 1 || tr[0]["id"] != "chatcmpl-tool-6a1f0c9e8d7b4a3c" || tr[0]["output"] != "echo: hello" {
				t.Errorf("tool results = %v", tr)
			}
		})
	}
}

// The synthesis pass gets its report from servers that refuse json_schema
// (llama.cpp's 500, then LM Studio's json_object refusal: the JSON comes in
// prose), and a structured-output refusal is recorded without a second
// attempt while the loop's answer still delivers.
func TestSynthesisAcrossProviders(t *testing.T) {
	finding := `{"healthy":false,"verdict":"issues_found","summary":"s","findings":[{"severity":"high","kind":"Deployment","namespace":"shop","name":"web","reason":"OOMKilled","detail":"exit 137","remediation":"raise the limit","remediable":true,"confidence":0.8,"key":""}]}`
	t.Run("json_schema and json_object refused: JSON parsed from prose", func(t *testing.T) {
		r := newRig(t, rigOpts{}, lookFirst, llmtest.Text("web in shop is OOMKilled"),
			llmtest.Provider("llamacpp_500_json_schema"), llmtest.Provider("lmstudio_400_json_object"),
			llmtest.Text("<think>the transcript shows one OOM kill</think>Here is the report:\n"+finding+"\nLet me know if you need more."))
		res := r.run(t, api.RunRequest{Task: "check shop"})
		if res.Status != api.StatusCompleted || len(res.Findings) != 1 || res.Findings[0].Key != "shop-deployment-web-oomkilled" || res.Verdict != "issues_found" {
			t.Fatalf("result = %+v", res)
		}
		reqs := r.llm.Requests()
		if len(reqs) != 5 || reqs[4].Request.ResponseFormat != nil || !strings.Contains(reqs[4].Request.Messages[0].Content, "matching this JSON Schema") {
			t.Fatalf("%d requests; the last one asked %+v", len(reqs), reqs[len(reqs)-1].Request.ResponseFormat)
		}
		syn := eventsOf(r.events(t, res.RunID), "synthesis")
		if len(syn) != 1 || syn[0]["findings"] != float64(1) || !strings.Contains(syn[0]["reasoning"].(string), "one OOM kill") {
			t.Errorf("synthesis events = %v", syn)
		}
	})
	t.Run("OpenAI refusal: recorded, not retried, prose delivers", func(t *testing.T) {
		prose := "One problem.\n```json\n{\"verdict\":\"issues_found\",\"findings\":[{\"severity\":\"high\",\"kind\":\"Deployment\",\"namespace\":\"shop\",\"name\":\"web\",\"reason\":\"OOMKilled\"}]}\n```"
		r := newRig(t, rigOpts{}, lookFirst, llmtest.Text(prose), llmtest.Provider("openai_refusal"), llmtest.Text("never asked"))
		res := r.run(t, api.RunRequest{Task: "check shop"})
		if len(res.Findings) != 1 || res.Findings[0].Name != "web" || res.Answer != "One problem." {
			t.Fatalf("result = %+v", res)
		}
		if n := len(r.llm.Requests()); n != 3 {
			t.Errorf("%d requests, want 3: a refusal is not asked again", n)
		}
		syn := eventsOf(r.events(t, res.RunID), "synthesis")
		if len(syn) != 1 || syn[0]["refusal"] != "I'm sorry, I can't assist with that request." {
			t.Errorf("synthesis events = %v", syn)
		}
	})
}

// An Azure 429 with Retry-After is waited out and the same endpoint asked
// again: the run completes with the model, without the playbook.
func TestRateLimitWaitedNotSentToThePlaybook(t *testing.T) {
	played := false
	pb := engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
		played = true
		run.SetAnswer("from the playbook")
		return nil
	})
	r := newRig(t, rigOpts{playbook: pb, timeout: 5 * time.Second},
		llmtest.WithHeader(llmtest.Provider("azure_429_token_rate"), "retry-after-ms", "40"), llmtest.Text("answered after the wait"), healthyReport)
	res := r.run(t, api.RunRequest{Task: "anything"})
	if played || res.Status != api.StatusCompleted || res.Answer != "answered after the wait" {
		t.Fatalf("played %v, result = %+v", played, res)
	}
	if n := len(r.llm.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (429, the retry; a question answered without tools has no synthesis)", n)
	}
}

// A run against each server's tool-call shape runs the tool and completes:
// llama.cpp's arguments as an object (the exact bytes reach the tool), an
// empty id, a tool call with finish_reason stop or none, LiteLLM's legacy
// function_call. The model's answer after it comes back as sent, and the
// tool's result goes back paired with the call's id.
func TestToolCallShapesAcrossServers(t *testing.T) {
	tests := []struct{ provider, id, args string }{
		{"llamacpp_tool_args_object", "Qz6fJ0cR1mWb4TnV8sKx2LhE9aYd3PuG", `{"text": "hello"}`},
		{"llamacpp_tool_call_no_id", "call_0_0", `{"text":"hello"}`},
		{"openai_tool_calls", "call_Jk4mQ8rT2vX6zB0nC3pL", `{"text":"hello"}`},
		{"ollama_tool_call_stop", "call_v2x8k1qe", `{"text":"hello"}`},
		{"lmstudio_tool_call", "365174485", `{"text":"hello"}`},
		{"litellm_function_call", "call_0_0", `{"text":"hello"}`},
		{"litellm_no_finish_reason", "chatcmpl-tool-b81f3c2e6d4a4f0e", `{"text": "hello"}`},
	}
	for _, tc := range tests {
		t.Run(tc.provider, func(t *testing.T) {
			r := newRig(t, rigOpts{}, llmtest.Provider(tc.provider), llmtest.Text("The echo said hello."), healthyReport)
			res := r.run(t, api.RunRequest{Task: "say hello"})
			if res.Status != api.StatusCompleted || res.Answer != "The echo said hello." {
				t.Fatalf("status %s, answer %q, error %q", res.Status, res.Answer, res.Error)
			}
			evs := r.events(t, res.RunID)
			calls, results := eventsOf(evs, "tool_call"), eventsOf(evs, "tool_result")
			if len(calls) != 1 || calls[0]["id"] != tc.id || fmt.Sprint(calls[0]["args"]) != fmt.Sprint(rawOrMap(tc.args)) {
				t.Errorf("tool calls = %v, want id %s args %s", calls, tc.id, tc.args)
			}
			if len(results) != 1 || results[0]["output"] != "echo: hello" {
				t.Errorf("tool results = %v", results)
			}
			reqs := r.llm.Requests()
			if len(reqs) < 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			sent := reqs[1].Request.Messages
			if last := sent[len(sent)-1]; last.Role != "tool" || last.ToolCallID != tc.id {
				t.Errorf("the result went back as %+v", last)
			}
			if a := sent[len(sent)-2]; len(a.ToolCalls) != 1 || a.ToolCalls[0].Function.Arguments != tc.args {
				t.Errorf("the call went back as %+v, want arguments %s", a.ToolCalls, tc.args)
			}
		})
	}
}

// rawOrMap is how the trace shows JSON arguments once read back.
func rawOrMap(s string) any {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	return v
}

package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// The answers of the servers users run (llmtest/providers: OpenAI, vLLM,
// Ollama, llama.cpp, LM Studio, LiteLLM, Azure), replayed on the wire: each
// either reaches the caller in the OpenAI shape — a tool call with an id,
// its arguments the exact bytes the model sent, as a string; reasoning in
// ReasoningContent; content as sent — or fails naming the server's quirk.
func TestServerShapes(t *testing.T) {
	t.Parallel()
	type call struct{ id, name, args string } // id "*": any non-empty id
	tests := []struct {
		name      string
		reply     llmtest.Reply
		calls     []call
		content   string // prefix of the content
		reasoning string // prefix of ReasoningContent
		finish    string
		errWant   []string // the call fails; its error holds each
	}{
		{name: "openai tool call", reply: llmtest.Provider("openai_tool_calls"),
			calls: []call{{"call_Jk4mQ8rT2vX6zB0nC3pL", "echo", `{"text":"hello"}`}}, finish: "tool_calls"},
		{name: "llama.cpp arguments as an object", reply: llmtest.Provider("llamacpp_tool_args_object"),
			calls: []call{{"Qz6fJ0cR1mWb4TnV8sKx2LhE9aYd3PuG", "echo", `{"text": "hello"}`}}, finish: "tool_calls"},
		{name: "llama.cpp empty id", reply: llmtest.Provider("llamacpp_tool_call_no_id"),
			calls: []call{{"call_0_0", "echo", `{"text":"hello"}`}}, finish: "tool_calls"},
		{name: "ollama tool call with finish stop", reply: llmtest.Provider("ollama_tool_call_stop"),
			calls: []call{{"call_v2x8k1qe", "echo", `{"text":"hello"}`}}, finish: "stop"},
		{name: "lm studio numeric id", reply: llmtest.Provider("lmstudio_tool_call"),
			calls: []call{{"365174485", "echo", `{"text":"hello"}`}}, finish: "tool_calls"},
		{name: "litellm legacy function_call", reply: llmtest.Provider("litellm_function_call"),
			calls: []call{{"call_0_0", "echo", `{"text":"hello"}`}}, finish: "tool_calls"},
		{name: "litellm no finish reason", reply: llmtest.Provider("litellm_no_finish_reason"),
			calls: []call{{"chatcmpl-tool-b81f3c2e6d4a4f0e", "echo", `{"text": "hello"}`}}, finish: ""},
		{name: "vllm reasoning with a tool call", reply: llmtest.Provider("vllm_reasoning_tool_call"),
			calls: []call{{"chatcmpl-tool-6a1f0c9e8d7b4a3c", "echo", `{"text": "hello"}`}}, reasoning: "I should echo first", finish: "tool_calls"},
		{name: "vllm reasoning_content", reply: llmtest.Provider("vllm_reasoning_content"),
			content: "web in shop is OOMKilled", reasoning: "The pod web-7c9 in shop restarted 14 times", finish: "stop"},
		{name: "ollama reasoning field", reply: llmtest.Provider("ollama_reasoning"),
			content: "The echo said hello.", reasoning: "The tool answered", finish: "stop"},
		{name: "llama.cpp reasoning_content", reply: llmtest.Provider("llamacpp_reasoning_content"),
			content: "The echo said hello.", reasoning: "Echo returned hello", finish: "stop"},
		{name: "inline think, left to the caller", reply: llmtest.Provider("ollama_think_inline"),
			content: "<think>", finish: "stop"},
		{name: "fenced report, left to the caller", reply: llmtest.Provider("lmstudio_fenced_report"),
			content: "Here is the diagnostic report:\n\n```json", finish: "stop"},
		{name: "prefixed report, left to the caller", reply: llmtest.Provider("ollama_prefixed_report"),
			content: "Based on the transcript, the report is: {", finish: "stop"},
		{name: "azure empty choices", reply: llmtest.Provider("azure_empty_choices"),
			errWant: []string{"no choices", `empty "choices" list`}},
		{name: "error object in a 200 body", reply: llmtest.Provider("litellm_200_error"),
			errWant: []string{"HTTP 200 carries an error body", "model requires more system memory"}},
		{name: "arguments a number", reply: llmtest.Status(http.StatusOK,
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"echo","arguments":42}}]},"finish_reason":"tool_calls"}]}`,
			"application/json"),
			errWant: []string{"tool call 0", "neither a JSON object nor a string: 42"}},
		{name: "function_call a string", reply: llmtest.Status(http.StatusOK,
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","function_call":"echo"},"finish_reason":"function_call"}]}`,
			"application/json"),
			errWant: []string{"function_call is not an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := twoEndpoints(t, llmtest.NewServer(t, tt.reply), nil, testTimeout)
			resp, err := c.Chat(context.Background(), chatRequest())
			if tt.errWant != nil {
				var e *llm.Error
				if err == nil || !errors.As(err, &e) || e.Kind != llm.KindInvalidResponse {
					t.Fatalf("err = %v (%T), want an invalid_response *llm.Error", err, err)
				}
				for _, s := range tt.errWant {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ch := resp.Choices[0]
			m := ch.Message
			if string(ch.FinishReason) != tt.finish {
				t.Errorf("finish_reason = %q, want %q", ch.FinishReason, tt.finish)
			}
			if len(m.ToolCalls) != len(tt.calls) {
				t.Fatalf("%d tool calls, want %d: %+v", len(m.ToolCalls), len(tt.calls), m.ToolCalls)
			}
			for i, w := range tt.calls {
				got := m.ToolCalls[i]
				if got.ID != w.id || got.Type != "function" || got.Function.Name != w.name || got.Function.Arguments != w.args {
					t.Errorf("tool call %d = %+v, want id %q name %q arguments %s", i, got, w.id, w.name, w.args)
				}
			}
			if m.FunctionCall != nil {
				t.Errorf("function_call left beside tool_calls: %+v", m.FunctionCall)
			}
			if !strings.HasPrefix(m.Content, tt.content) || (tt.content == "") != (m.Content == "") {
				t.Errorf("content = %q, want prefix %q", m.Content, tt.content)
			}
			if !strings.HasPrefix(m.ReasoningContent, tt.reasoning) || (tt.reasoning == "") != (m.ReasoningContent == "") {
				t.Errorf("reasoning = %q, want prefix %q", m.ReasoningContent, tt.reasoning)
			}
		})
	}
}

package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// structuredRequest asks for a strict json_schema, as the synthesis pass does.
func structuredRequest() openai.ChatCompletionRequest {
	req := chatRequest()
	req.Tools = nil
	req.ResponseFormat = &openai.ChatCompletionResponseFormat{
		Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name: "Report", Strict: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"healthy":{"type":"boolean"}},"required":["healthy"],"additionalProperties":false}`),
		},
	}
	return req
}

func twoEndpoints(t *testing.T, primary, fallback *llmtest.Server, timeout time.Duration) *llm.Client {
	t.Helper()
	eps := []llm.Endpoint{{Name: "primary", BaseURL: primary.URL(), APIKey: primaryKey, Model: "m-primary"}}
	if fallback != nil {
		eps = append(eps, llm.Endpoint{Name: "fallback", BaseURL: fallback.URL(), APIKey: fallbackKey, Model: "m-fallback"})
	}
	c, err := llm.New(llm.Config{Timeout: timeout, Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// formatOf is the response_format type a recorded request carried ("" for none).
func formatOf(r llmtest.Recorded) string {
	if r.Request.ResponseFormat == nil {
		return ""
	}
	return string(r.Request.ResponseFormat.Type)
}

// A server that refuses the structured-output format gets the request
// again with the next one — json_schema → json_object → none — with the
// schema moved into the system message, and the endpoint keeps the level
// it accepted; the fallback is never asked for it.
func TestStructuredOutputFallsBack(t *testing.T) {
	t.Parallel()
	answer := llmtest.Text(`{"healthy":true}`)
	tests := []struct {
		name    string
		refusal []llmtest.Reply
		formats []string // response_format of each request to the primary, the answered one last
	}{
		{"OpenAI 400 json_schema", []llmtest.Reply{llmtest.Provider("openai_400_json_schema")}, []string{"json_schema", "json_object"}},
		{"Azure 400 api-version", []llmtest.Reply{llmtest.Provider("azure_400_json_schema")}, []string{"json_schema", "json_object"}},
		{"vLLM 400 schema backend", []llmtest.Reply{llmtest.Provider("vllm_400_schema")}, []string{"json_schema", "json_object"}},
		{"llama.cpp 500 json_schema", []llmtest.Reply{llmtest.Provider("llamacpp_500_json_schema")}, []string{"json_schema", "json_object"}},
		{"json_object refused too (LM Studio)", []llmtest.Reply{llmtest.Provider("llamacpp_500_json_schema"), llmtest.Provider("lmstudio_400_json_object")}, []string{"json_schema", "json_object", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary := llmtest.NewServer(t, append(append([]llmtest.Reply(nil), tt.refusal...), answer, answer)...)
			fallback := llmtest.NewServer(t)
			c := twoEndpoints(t, primary, fallback, testTimeout)
			resp, err := c.Chat(context.Background(), structuredRequest())
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Endpoint != "primary" || resp.Choices[0].Message.Content != `{"healthy":true}` {
				t.Errorf("answered by %s: %q", resp.Endpoint, resp.Choices[0].Message.Content)
			}
			reqs := primary.Requests()
			var got []string
			for _, r := range reqs {
				got = append(got, formatOf(r))
			}
			if strings.Join(got, ",") != strings.Join(tt.formats, ",") {
				t.Fatalf("formats sent = %q, want %q", got, tt.formats)
			}
			last := reqs[len(reqs)-1].Request
			if sys := last.Messages[0]; sys.Role != "system" || !strings.HasPrefix(sys.Content, "You are Noor.") ||
				!strings.Contains(sys.Content, `matching this JSON Schema:`) || !strings.Contains(sys.Content, `"required":["healthy"]`) {
				t.Errorf("downgraded system message = %q; want the schema as an instruction in it", sys.Content)
			}
			if len(last.Messages) != 2 {
				t.Errorf("downgraded request has %d messages, want the same 2", len(last.Messages))
			}
			if n := len(fallback.Requests()); n != 0 {
				t.Errorf("the fallback got %d requests for a format refusal", n)
			}
			// The next call starts at the level the endpoint accepted.
			if _, err := c.Chat(context.Background(), structuredRequest()); err != nil {
				t.Fatalf("second Chat: %v", err)
			}
			reqs = primary.Requests()
			if f := formatOf(reqs[len(reqs)-1]); f != tt.formats[len(tt.formats)-1] {
				t.Errorf("second call sent %q, want %q", f, tt.formats[len(tt.formats)-1])
			}
		})
	}
}

// A 400 that is not about the format still fails fast, and a request
// without a response format is never rewritten.
func TestOtherRefusalsAreNotFormatFallbacks(t *testing.T) {
	t.Parallel()
	primary := llmtest.NewServer(t, llmtest.APIError(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens."))
	c := twoEndpoints(t, primary, nil, testTimeout)
	_, err := c.Chat(context.Background(), structuredRequest())
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindHTTP4xx || len(primary.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests; want one 4xx", err, len(primary.Requests()))
	}

	plain := llmtest.NewServer(t, llmtest.Provider("llamacpp_500_json_schema"), llmtest.Text("from the fallback"))
	fb := llmtest.NewServer(t, llmtest.Text("from the fallback"))
	c = twoEndpoints(t, plain, fb, testTimeout)
	resp, err := c.Chat(context.Background(), chatRequest())
	if err != nil || resp.Endpoint != "fallback" || len(plain.Requests()) != 1 {
		t.Fatalf("without a response format a 500 fails over: resp %+v err %v", resp, err)
	}
}

// Reasoning text arrives as reasoning_content (vLLM before 0.11, llama.cpp,
// DeepSeek) or as reasoning (Ollama, vLLM from 0.11); both reach the
// caller as ReasoningContent, and the answer's content stays as sent.
func TestReasoningFieldsReachReasoningContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider, content, reasoning string
		calls                        int
	}{
		{"vllm_reasoning_content", "web in shop is OOMKilled: raise its memory limit.", "The pod web-7c9 in shop restarted 14 times", 0},
		{"vllm_reasoning_tool_call", "", "I should echo first", 1},
		{"ollama_reasoning", "The echo said hello.", "The tool answered 'echo: hello'.", 0},
		{"llamacpp_reasoning_content", "The echo said hello.", "Echo returned hello", 0},
		{"ollama_think_inline", "<think>\nThe user asked me to say hello.", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			c := twoEndpoints(t, llmtest.NewServer(t, llmtest.Provider(tt.provider)), nil, testTimeout)
			resp, err := c.Chat(context.Background(), chatRequest())
			if err != nil {
				t.Fatal(err)
			}
			m := resp.Choices[0].Message
			if !strings.HasPrefix(m.Content, tt.content) || len(m.ToolCalls) != tt.calls {
				t.Errorf("content %q, %d tool calls; want prefix %q, %d", m.Content, len(m.ToolCalls), tt.content, tt.calls)
			}
			if (tt.reasoning == "") != (m.ReasoningContent == "") || !strings.HasPrefix(m.ReasoningContent, tt.reasoning) {
				t.Errorf("reasoning = %q, want prefix %q", m.ReasoningContent, tt.reasoning)
			}
		})
	}
}

// Retry-After on a 429 is waited, then the same endpoint is asked again,
// before any failover — when the wait fits the per-call timeout and half
// of the caller's remaining deadline; otherwise the call fails over at
// once and says why it did not wait.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	azure := func(ms string) llmtest.Reply {
		return llmtest.WithHeader(llmtest.Provider("azure_429_token_rate"), "retry-after-ms", ms)
	}
	tests := []struct {
		name         string
		primary      []llmtest.Reply
		deadline     time.Duration // of the caller's context; 0: none
		endpoint     string        // who answered; "" when the call fails
		primaryReqs  int
		fallbackReqs int
		errContains  string
	}{
		{"Azure retry-after-ms waited, same endpoint answers", []llmtest.Reply{azure("30"), llmtest.Text("ok")}, 0, "primary", 2, 0, ""},
		{"Retry-After seconds waited", []llmtest.Reply{llmtest.WithHeader(llmtest.Provider("openai_429_tokens"), "Retry-After", "0.05"), llmtest.Text("ok")}, 0, "primary", 2, 0, ""},
		{"OpenAI 429 without Retry-After fails over", []llmtest.Reply{llmtest.Provider("openai_429_tokens")}, 0, "fallback", 1, 1, ""},
		{"a day of quota is not waited", []llmtest.Reply{llmtest.Provider("azure_429_daily_quota")}, 0, "fallback", 1, 1, ""},
		{"Ollama 503 busy without Retry-After fails over", []llmtest.Reply{llmtest.Provider("ollama_503_busy")}, 0, "fallback", 1, 1, ""},
		{"a wait over half the caller's deadline is not waited", []llmtest.Reply{azure("1500")}, 2 * time.Second, "fallback", 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary := llmtest.NewServer(t, tt.primary...)
			fallback := llmtest.NewServer(t, llmtest.Text("from the fallback"))
			c := twoEndpoints(t, primary, fallback, 5*time.Second)
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			resp, err := c.Chat(ctx, chatRequest())
			if err != nil || resp.Endpoint != tt.endpoint {
				t.Fatalf("resp %+v err %v; want an answer from %s", resp, err, tt.endpoint)
			}
			if p, f := len(primary.Requests()), len(fallback.Requests()); p != tt.primaryReqs || f != tt.fallbackReqs {
				t.Errorf("requests: primary %d fallback %d, want %d and %d", p, f, tt.primaryReqs, tt.fallbackReqs)
			}
		})
	}
}

// Without a fallback, a Retry-After that cannot be waited ends the call
// with the reason, and a caller that gives up during the wait stops it.
func TestRetryAfterNotWaitedSaysWhy(t *testing.T) {
	t.Parallel()
	c := twoEndpoints(t, llmtest.NewServer(t, llmtest.Provider("azure_429_daily_quota")), nil, 5*time.Second)
	_, err := c.Chat(context.Background(), chatRequest())
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != 24*time.Hour ||
		!strings.Contains(err.Error(), "Retry-After 24h0m0s not waited: longer than the per-call timeout 5s (LLM_TIMEOUT)") {
		t.Fatalf("err = %v", err)
	}

	srv := llmtest.NewServer(t, llmtest.WithHeader(llmtest.Provider("azure_429_token_rate"), "retry-after-ms", "2000"), llmtest.Text("too late"))
	core, logs := observer.New(zap.WarnLevel)
	c, err = llm.New(llm.Config{Timeout: 5 * time.Second, Logger: zap.New(core),
		Endpoints: []llm.Endpoint{{Name: "primary", BaseURL: srv.URL(), Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		// Cancel once the client has started waiting out the 429.
		for deadline := time.Now().Add(5 * time.Second); logs.FilterMessageSnippet("waiting as Retry-After asks").Len() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel(errors.New("run canceled by request"))
	}()
	_, err = c.Chat(ctx, chatRequest())
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "canceled while waiting") || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
	}
}

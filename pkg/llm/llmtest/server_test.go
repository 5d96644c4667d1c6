package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

func client(s *llmtest.Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = s.URL()
	return openai.NewClientWithConfig(cfg)
}

func chatReq() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "test-model",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}},
	}
}

func TestRepliesParseWithGoOpenAI(t *testing.T) {
	t.Parallel()
	type payload struct {
		Healthy bool     `json:"healthy"`
		Items   []string `json:"items"`
	}
	tests := []struct {
		name  string
		reply llmtest.Reply
		check func(t *testing.T, resp openai.ChatCompletionResponse)
	}{
		{
			name:  "text",
			reply: llmtest.Text("all good"),
			check: func(t *testing.T, resp openai.ChatCompletionResponse) {
				msg := resp.Choices[0].Message
				if msg.Role != openai.ChatMessageRoleAssistant || msg.Content != "all good" {
					t.Errorf("message = %+v", msg)
				}
				if resp.Choices[0].FinishReason != openai.FinishReasonStop {
					t.Errorf("finish = %q", resp.Choices[0].FinishReason)
				}
				if resp.Usage.PromptTokens != llmtest.DefaultPromptTokens || resp.Usage.CompletionTokens != llmtest.DefaultCompletionTokens ||
					resp.Usage.TotalTokens != llmtest.DefaultPromptTokens+llmtest.DefaultCompletionTokens {
					t.Errorf("usage = %+v", resp.Usage)
				}
				if resp.Model != "test-model" || resp.Object != "chat.completion" || resp.ID == "" {
					t.Errorf("envelope = %q %q %q", resp.Model, resp.Object, resp.ID)
				}
			},
		},
		{
			name: "tool calls, invalid JSON arguments kept verbatim",
			reply: llmtest.ToolCalls(
				llmtest.Call{ID: "call_a", Name: "k8s_get_events", Args: `{"namespace":"prod"}`},
				llmtest.Call{Name: "cluster_problems", Args: `{not json`},
			),
			check: func(t *testing.T, resp openai.ChatCompletionResponse) {
				c := resp.Choices[0]
				if c.FinishReason != openai.FinishReasonToolCalls {
					t.Errorf("finish = %q", c.FinishReason)
				}
				if c.Message.Content != "" {
					t.Errorf("content = %q, want empty", c.Message.Content)
				}
				tc := c.Message.ToolCalls
				if len(tc) != 2 {
					t.Fatalf("tool calls = %+v", tc)
				}
				if tc[0].ID != "call_a" || tc[0].Type != openai.ToolTypeFunction || tc[0].Function.Name != "k8s_get_events" || tc[0].Function.Arguments != `{"namespace":"prod"}` {
					t.Errorf("call 0 = %+v", tc[0])
				}
				if tc[1].ID == "" || tc[1].ID == tc[0].ID || tc[1].Function.Arguments != `{not json` {
					t.Errorf("call 1 = %+v", tc[1])
				}
			},
		},
		{
			name:  "json content",
			reply: llmtest.JSON(payload{Healthy: true, Items: []string{"a"}}),
			check: func(t *testing.T, resp openai.ChatCompletionResponse) {
				var got payload
				if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &got); err != nil {
					t.Fatalf("content %q: %v", resp.Choices[0].Message.Content, err)
				}
				if !got.Healthy || len(got.Items) != 1 || got.Items[0] != "a" {
					t.Errorf("payload = %+v", got)
				}
			},
		},
		{
			name:  "usage override",
			reply: llmtest.WithUsage(llmtest.Text("x"), 1234, 56),
			check: func(t *testing.T, resp openai.ChatCompletionResponse) {
				if resp.Usage.PromptTokens != 1234 || resp.Usage.CompletionTokens != 56 || resp.Usage.TotalTokens != 1290 {
					t.Errorf("usage = %+v", resp.Usage)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := llmtest.NewServer(t, tt.reply)
			resp, err := client(s).CreateChatCompletion(context.Background(), chatReq())
			if err != nil {
				t.Fatalf("CreateChatCompletion: %v", err)
			}
			tt.check(t, resp)
			if s.Pending() != 0 {
				t.Errorf("pending = %d, want the reply consumed", s.Pending())
			}
		})
	}
}

func TestFaultsAsGoOpenAISeesThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      llmtest.Reply
		wantStatus int
		wantInErr  string
	}{
		{"html 502", llmtest.Status(502, "<html><head><title>502 Bad Gateway</title></head></html>", "text/html"), 502, "502 Bad Gateway"},
		{"rate limited", llmtest.RateLimited(), 429, "Rate limit reached"},
		{"api error", llmtest.APIError(401, "Incorrect API key provided"), 401, "Incorrect API key provided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := llmtest.NewServer(t, tt.reply)
			_, err := client(s).CreateChatCompletion(context.Background(), chatReq())
			var apiErr *openai.APIError
			var reqErr *openai.RequestError
			status := 0
			switch {
			case errors.As(err, &apiErr):
				status = apiErr.HTTPStatusCode
			case errors.As(err, &reqErr):
				status = reqErr.HTTPStatusCode
			default:
				t.Fatalf("err = %v, want an HTTP error", err)
			}
			if status != tt.wantStatus || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("status %d err %v; want %d containing %q", status, err, tt.wantStatus, tt.wantInErr)
			}
		})
	}
}

func TestScriptExhaustedAnswers500(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Text("only one"))
	c := client(s)
	if _, err := c.CreateChatCompletion(context.Background(), chatReq()); err != nil {
		t.Fatalf("first call: %v", err)
	}
	_, err := c.CreateChatCompletion(context.Background(), chatReq())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || !strings.Contains(apiErr.Message, "llmtest: script exhausted") {
		t.Fatalf("second call err = %v, want 500 script exhausted", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("recorded %d requests, want 2", n)
	}
}

func TestEndlessRepeatsAndIsNeverConsumed(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Endless("k8s_get_resources", `{"kind":"pods"}`), llmtest.Text("never reached"))
	c := client(s)
	ids := map[string]bool{}
	for i := range 5 {
		resp, err := c.CreateChatCompletion(context.Background(), chatReq())
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		tc := resp.Choices[0].Message.ToolCalls
		if len(tc) != 1 || tc[0].Function.Name != "k8s_get_resources" || tc[0].Function.Arguments != `{"kind":"pods"}` {
			t.Fatalf("call %d: tool calls = %+v", i, tc)
		}
		ids[tc[0].ID] = true
	}
	if len(ids) != 5 {
		t.Errorf("tool call IDs not unique per answer: %v", ids)
	}
	if s.Pending() != 2 {
		t.Errorf("pending = %d, want 2 (endless stays, text never reached)", s.Pending())
	}
}

func TestWhenAndPush(t *testing.T) {
	t.Parallel()
	hasTools := func(r openai.ChatCompletionRequest) bool { return len(r.Tools) > 0 }
	s := llmtest.NewServer(t, llmtest.When(hasTools, llmtest.Text("with tools")))
	s.Push(llmtest.Text("plain"))
	c := client(s)

	resp, err := c.CreateChatCompletion(context.Background(), chatReq()) // no tools: skips the When reply
	if err != nil || resp.Choices[0].Message.Content != "plain" {
		t.Fatalf("no-tools call = %v, %v; want plain", resp.Choices, err)
	}
	req := chatReq()
	req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	resp, err = c.CreateChatCompletion(context.Background(), req)
	if err != nil || resp.Choices[0].Message.Content != "with tools" {
		t.Fatalf("tools call = %v, %v; want with tools", resp.Choices, err)
	}
}

func TestRecordsTheRequestAsSent(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Text("ok"))
	req := chatReq()
	req.Messages = append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "be brief"}}, req.Messages...)
	if _, err := client(s).CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	recs := s.Requests()
	if len(recs) != 1 {
		t.Fatalf("recorded %d", len(recs))
	}
	r := recs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("method/path = %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if r.Request.Model != "test-model" || len(r.Request.Messages) != 2 || r.Request.Messages[0].Content != "be brief" {
		t.Errorf("decoded request = %+v", r.Request)
	}
	if !strings.Contains(string(r.Raw), `"be brief"`) {
		t.Errorf("raw = %s", r.Raw)
	}
}

func TestRejectsMalformedRequests(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Text("unused"))
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"no model", http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400},
		{"no messages", http.MethodPost, "/v1/chat/completions", `{"model":"m"}`, 400},
		{"not json", http.MethodPost, "/v1/chat/completions", `{`, 400},
		{"unknown path", http.MethodPost, "/chat/completions", `{}`, 404},
		{"models", http.MethodGet, "/v1/models", ``, 200},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, strings.TrimSuffix(s.URL(), "/v1")+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d (%s), want %d", tt.name, resp.StatusCode, body, tt.want)
		}
		if !json.Valid(body) {
			t.Errorf("%s: body is not JSON: %s", tt.name, body)
		}
	}
	if s.Pending() != 1 {
		t.Errorf("a malformed request consumed the script")
	}
	if n := len(s.Requests()); n != len(tests) {
		t.Errorf("recorded %d requests, want %d", n, len(tests))
	}
}

func TestDisconnectIsAConnectionError(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Disconnect())
	_, err := client(s).CreateChatCompletion(context.Background(), chatReq())
	if err == nil {
		t.Fatal("want a connection error")
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	if errors.As(err, &apiErr) || errors.As(err, &reqErr) {
		t.Fatalf("err = %v, want a transport error, not an HTTP answer", err)
	}
}

// A hanging request must not block Close, and Close must release it.
func TestHangIsReleasedByClose(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	s := llmtest.NewServer(t, llmtest.When(func(openai.ChatCompletionRequest) bool {
		close(arrived)
		return true
	}, llmtest.Hang()))

	callDone := make(chan error, 1)
	go func() {
		_, err := client(s).CreateChatCompletion(context.Background(), chatReq())
		callDone <- err
	}()
	<-arrived

	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	select {
	case <-closed:
	case <-deadline.C:
		t.Fatal("Close blocked on a hanging request")
	}
	select {
	case err := <-callDone:
		if err == nil {
			t.Error("a hung request returned no error after Close")
		}
	case <-deadline.C:
		t.Fatal("the hung request was not released by Close")
	}
}

func TestHangEndsWhenTheClientGivesUp(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Hang(), llmtest.Text("after"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c := client(s)
	if _, err := c.CreateChatCompletion(ctx, chatReq()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	resp, err := c.CreateChatCompletion(context.Background(), chatReq())
	if err != nil || resp.Choices[0].Message.Content != "after" {
		t.Fatalf("next call = %v, %v", resp.Choices, err)
	}
}

func TestSlowAnswersAfterTheDelay(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.Slow(50*time.Millisecond, llmtest.Text("late")))
	start := time.Now()
	resp, err := client(s).CreateChatCompletion(context.Background(), chatReq())
	if err != nil || resp.Choices[0].Message.Content != "late" {
		t.Fatalf("resp = %v, %v", resp.Choices, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("answered after %s, want at least 50ms", d)
	}
}

// A policy server answers from each request's content, after any pushed
// replies, and records every request like a scripted one.
func TestPolicyServerDecidesFromTheRequest(t *testing.T) {
	t.Parallel()
	s := llmtest.NewPolicyServer(func(req openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Text("you said " + req.Messages[len(req.Messages)-1].Content)
	})
	defer s.Close()
	s.Push(llmtest.Text("pushed first"))
	c := client(s)
	for _, want := range []string{"pushed first", "you said hi", "you said hi"} {
		resp, err := c.CreateChatCompletion(context.Background(), chatReq())
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("recorded %d requests, want 3", n)
	}
	s.Close()
	if _, err := c.CreateChatCompletion(context.Background(), chatReq()); err == nil {
		t.Error("a closed policy server still answers")
	}
}

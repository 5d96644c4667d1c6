package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

const (
	testTimeout = 200 * time.Millisecond
	primaryKey  = "sk-primary-secret-123"
	fallbackKey = "sk-fallback-secret-456"
)

const badGatewayHTML = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\r\n"

const completionJSON = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"labelled html"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

func chatRequest() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are Noor."},
			{Role: openai.ChatMessageRoleUser, Content: "sweep the cluster"},
		},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        "cluster_problems",
			Description: "List unhealthy workloads.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"namespace":{"type":"string"}}}`),
		}}},
	}
}

// observed records Config.Observe calls.
type observed struct {
	mu    sync.Mutex
	calls []string
}

func (o *observed) observe(endpoint, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, endpoint+":"+outcome)
}

func (o *observed) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.calls...)
}

// closedURL is the base URL of a server that is gone (connection refused).
func closedURL(t *testing.T) string {
	s := llmtest.NewServer(t)
	s.Close()
	return s.URL()
}

func TestChatFailover(t *testing.T) {
	t.Parallel()
	type want struct {
		endpoint      string   // answering endpoint; "" when the call fails
		attempts      int      // Response.Attempts on success
		primaryReqs   int      // requests the primary server received
		fallbackReqs  int      // requests the fallback server received
		kind          string   // Kind of the last failure
		status        int      // Status of the last failure
		failures      int      // failures listed in the error
		errContains   []string // substrings of the error text
		observe       []string // endpoint:outcome per attempt
		maxElapsed    time.Duration
		contentAnswer string
	}
	tests := []struct {
		name          string
		primary       []llmtest.Reply
		fallback      []llmtest.Reply // nil: no fallback endpoint
		primaryClosed bool            // primary refuses connections
		want          want
	}{
		{
			name:    "ok from the primary",
			primary: []llmtest.Reply{llmtest.Text("all healthy")},
			want: want{endpoint: "primary", attempts: 1, primaryReqs: 1, contentAnswer: "all healthy",
				observe: []string{"primary:ok"}},
		},
		{
			name:     "a hanging primary fails over within the timeout",
			primary:  []llmtest.Reply{llmtest.Hang()},
			fallback: []llmtest.Reply{llmtest.Text("from fallback")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "from fallback",
				observe: []string{"primary:timeout", "fallback:ok"}, maxElapsed: 2 * time.Second},
		},
		{
			name:    "a hanging primary without fallback is a timeout error, not retried",
			primary: []llmtest.Reply{llmtest.Hang(), llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindTimeout, failures: 1,
				errContains: []string{"no answer from primary", "within 200ms", "LLM_TIMEOUT"},
				observe:     []string{"primary:timeout"}, maxElapsed: 2 * time.Second},
		},
		{
			name:     "both hang: each tried once, both listed",
			primary:  []llmtest.Reply{llmtest.Hang()},
			fallback: []llmtest.Reply{llmtest.Hang(), llmtest.Text("never sent")},
			want: want{primaryReqs: 1, fallbackReqs: 1, kind: llm.KindTimeout, failures: 2,
				errContains: []string{"all endpoints failed (2 attempts)", "no answer from primary", "no answer from fallback"},
				observe:     []string{"primary:timeout", "fallback:timeout"}, maxElapsed: 2 * time.Second},
		},
		{
			name:     "502 HTML page fails over",
			primary:  []llmtest.Reply{llmtest.Status(502, badGatewayHTML, "text/html")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:html", "fallback:ok"}},
		},
		{
			name:    "502 HTML page without fallback is a clear error",
			primary: []llmtest.Reply{llmtest.Status(502, badGatewayHTML, "text/html")},
			want: want{primaryReqs: 1, kind: llm.KindHTML, status: 502, failures: 1,
				errContains: []string{"HTML page instead of JSON", "HTTP 502", `"502 Bad Gateway"`}},
		},
		{
			name:     "HTML inside a 200 answer fails over",
			primary:  []llmtest.Reply{llmtest.Status(200, badGatewayHTML, "application/json")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:html", "fallback:ok"}},
		},
		{
			name:     "429 fails over",
			primary:  []llmtest.Reply{llmtest.RateLimited()},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:http_429", "fallback:ok"}},
		},
		{
			name:     "503 fails over",
			primary:  []llmtest.Reply{llmtest.APIError(503, "upstream overloaded")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:http_5xx", "fallback:ok"}},
		},
		{
			name:    "503 without fallback is not retried",
			primary: []llmtest.Reply{llmtest.APIError(503, "upstream overloaded"), llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindHTTP5xx, status: 503, failures: 1,
				errContains: []string{"server error from primary", "HTTP 503", "upstream overloaded"}},
		},
		{
			name:     "5xx then 429: all endpoints failed, each listed",
			primary:  []llmtest.Reply{llmtest.APIError(500, "boom")},
			fallback: []llmtest.Reply{llmtest.RateLimited(), llmtest.Text("never sent")},
			want: want{primaryReqs: 1, fallbackReqs: 1, kind: llm.KindRateLimited, status: 429, failures: 2,
				errContains: []string{"all endpoints failed (2 attempts)", "server error from primary", "HTTP 500: boom", "rate limited by fallback"}},
		},
		{
			name:     "401 does not fail over",
			primary:  []llmtest.Reply{llmtest.APIError(401, "Incorrect API key provided")},
			fallback: []llmtest.Reply{llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindAuth, status: 401, failures: 1,
				errContains: []string{"authentication failed at primary", "check LLM_API_KEY", "Incorrect API key provided"},
				observe:     []string{"primary:auth"}},
		},
		{
			name:     "403 does not fail over",
			primary:  []llmtest.Reply{llmtest.APIError(403, "forbidden")},
			fallback: []llmtest.Reply{llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindAuth, status: 403, failures: 1,
				errContains: []string{"authentication failed at primary", "check LLM_API_KEY"}},
		},
		{
			name:     "404 does not fail over",
			primary:  []llmtest.Reply{llmtest.APIError(404, "The model `m-primary` does not exist")},
			fallback: []llmtest.Reply{llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindNotFound, status: 404, failures: 1,
				errContains: []string{"model or path not found at primary", "check LLM_BASE_URL (should end in /v1) and AGENT_MODEL", "does not exist"}},
		},
		{
			name:     "400 does not fail over",
			primary:  []llmtest.Reply{llmtest.APIError(400, "Invalid 'messages[1].content'")},
			fallback: []llmtest.Reply{llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindHTTP4xx, status: 400, failures: 1,
				errContains: []string{"request rejected by primary", "HTTP 400", "Invalid 'messages[1].content'"}},
		},
		{
			name:     "fallback 401 after a primary timeout: gave up, both listed",
			primary:  []llmtest.Reply{llmtest.Hang()},
			fallback: []llmtest.Reply{llmtest.APIError(401, "bad key")},
			want: want{primaryReqs: 1, fallbackReqs: 1, kind: llm.KindAuth, status: 401, failures: 2,
				errContains: []string{"gave up after 2 attempts", "no answer from primary", "authentication failed at fallback", "check LLM_FALLBACK_API_KEY"}},
		},
		{
			name:          "connection refused fails over",
			primaryClosed: true,
			fallback:      []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:connection", "fallback:ok"}},
		},
		{
			name:     "a dropped connection fails over, not retried while a fallback remains",
			primary:  []llmtest.Reply{llmtest.Disconnect(), llmtest.Text("never sent")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:connection", "fallback:ok"}},
		},
		{
			name:    "a dropped connection at the only endpoint is retried once",
			primary: []llmtest.Reply{llmtest.Disconnect(), llmtest.Text("second try")},
			want: want{endpoint: "primary", attempts: 2, primaryReqs: 2, contentAnswer: "second try",
				observe: []string{"primary:connection", "primary:ok"}},
		},
		{
			name:    "max_retries=1: two dropped connections end the call",
			primary: []llmtest.Reply{llmtest.Disconnect(), llmtest.Disconnect(), llmtest.Text("never sent")},
			want: want{primaryReqs: 2, kind: llm.KindConnection, failures: 2,
				errContains: []string{"all endpoints failed (2 attempts)", "cannot reach primary"}},
		},
		{
			name:     "max_retries=1 across the whole call: the one retry goes to the last endpoint",
			primary:  []llmtest.Reply{llmtest.Disconnect(), llmtest.Text("never sent")},
			fallback: []llmtest.Reply{llmtest.Disconnect(), llmtest.Disconnect(), llmtest.Text("never sent")},
			want: want{primaryReqs: 1, fallbackReqs: 2, kind: llm.KindConnection, failures: 3,
				observe: []string{"primary:connection", "fallback:connection", "fallback:connection"}},
		},
		{
			name:     "200 that is not JSON fails over",
			primary:  []llmtest.Reply{llmtest.Status(200, `{"id":"x","choices":[`, "application/json")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:invalid_response", "fallback:ok"}},
		},
		{
			name:    "200 carrying an error object is an invalid response",
			primary: []llmtest.Reply{llmtest.Status(200, `{"error":{"message":"model is loading"}}`, "application/json")},
			want: want{primaryReqs: 1, kind: llm.KindInvalidResponse, status: 200, failures: 1,
				errContains: []string{"invalid response from primary", "model is loading"}},
		},
		{
			name:    "200 without choices is an invalid response",
			primary: []llmtest.Reply{llmtest.Status(200, `{"id":"x","object":"chat.completion","choices":[]}`, "application/json")},
			want: want{primaryReqs: 1, kind: llm.KindInvalidResponse, failures: 1,
				errContains: []string{"no choices"}},
		},
		{
			name:    "a JSON answer mislabelled text/html is still an answer",
			primary: []llmtest.Reply{llmtest.Status(200, completionJSON, "text/html; charset=utf-8")},
			want:    want{endpoint: "primary", attempts: 1, primaryReqs: 1, contentAnswer: "labelled html"},
		},
		{
			name:    "an empty text/html 502 is an HTML error",
			primary: []llmtest.Reply{llmtest.Status(502, "", "text/html")},
			want: want{primaryReqs: 1, kind: llm.KindHTML, status: 502, failures: 1,
				errContains: []string{"HTML page instead of JSON (HTTP 502)"}},
		},
		{
			name:     "Ollama-style 404 names the model and what to check",
			primary:  []llmtest.Reply{llmtest.Status(404, `{"error":"model \"llama9\" not found, try pulling it first"}`, "application/json")},
			fallback: []llmtest.Reply{llmtest.Text("never sent")},
			want: want{primaryReqs: 1, kind: llm.KindNotFound, status: 404, failures: 1,
				errContains: []string{"model m-primary", "LLM_BASE_URL (should end in /v1)", `model "llama9" not found, try pulling it first`}},
		},
		{
			name:     "a gateway 408 fails over like a timeout",
			primary:  []llmtest.Reply{llmtest.APIError(408, "upstream request timeout")},
			fallback: []llmtest.Reply{llmtest.Text("ok")},
			want: want{endpoint: "fallback", attempts: 2, primaryReqs: 1, fallbackReqs: 1, contentAnswer: "ok",
				observe: []string{"primary:timeout", "fallback:ok"}},
		},
		{
			name:    "an answer slower than nothing but within the timeout is fine",
			primary: []llmtest.Reply{llmtest.Slow(20*time.Millisecond, llmtest.Text("slow but ok"))},
			want:    want{endpoint: "primary", attempts: 1, primaryReqs: 1, contentAnswer: "slow but ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary := llmtest.NewServer(t, tt.primary...)
			primaryURL := primary.URL()
			if tt.primaryClosed {
				primaryURL = closedURL(t)
			}
			eps := []llm.Endpoint{{Name: "primary", BaseURL: primaryURL, APIKey: primaryKey, Model: "m-primary"}}
			var fallback *llmtest.Server
			if tt.fallback != nil {
				fallback = llmtest.NewServer(t, tt.fallback...)
				eps = append(eps, llm.Endpoint{Name: "fallback", BaseURL: fallback.URL(), APIKey: fallbackKey, Model: "m-fallback"})
			}
			obs := &observed{}
			c, err := llm.New(llm.Config{Endpoints: eps, Timeout: testTimeout, Observe: obs.observe})
			if err != nil {
				t.Fatalf("New: %v", err)
			}

			start := time.Now()
			resp, err := c.Chat(context.Background(), chatRequest())
			elapsed := time.Since(start)

			w := tt.want
			if got := len(primary.Requests()); got != w.primaryReqs {
				t.Errorf("primary received %d requests, want %d", got, w.primaryReqs)
			}
			if fallback != nil {
				if got := len(fallback.Requests()); got != w.fallbackReqs {
					t.Errorf("fallback received %d requests, want %d", got, w.fallbackReqs)
				}
			}
			if w.maxElapsed > 0 && elapsed > w.maxElapsed {
				t.Errorf("took %s, want under %s", elapsed, w.maxElapsed)
			}
			if w.observe != nil {
				if got := obs.get(); strings.Join(got, ",") != strings.Join(w.observe, ",") {
					t.Errorf("observed %v, want %v", got, w.observe)
				}
			}

			if w.endpoint != "" {
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if resp.Endpoint != w.endpoint || resp.Attempts != w.attempts {
					t.Errorf("answered by %s after %d attempts, want %s after %d", resp.Endpoint, resp.Attempts, w.endpoint, w.attempts)
				}
				if got := resp.Choices[0].Message.Content; got != w.contentAnswer {
					t.Errorf("content = %q, want %q", got, w.contentAnswer)
				}
				if resp.Usage.PromptTokens != llmtest.DefaultPromptTokens || resp.Usage.CompletionTokens != llmtest.DefaultCompletionTokens {
					t.Errorf("usage = %+v", resp.Usage)
				}
				return
			}

			if err == nil {
				t.Fatalf("Chat answered %+v, want an error", resp)
			}
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err %T %v is not an *llm.Error", err, err)
			}
			last := e
			var ae *llm.AttemptsError
			if errors.As(err, &ae) {
				if len(ae.Failures) != w.failures {
					t.Errorf("%d failures listed, want %d: %v", len(ae.Failures), w.failures, err)
				}
				last = ae.Last()
			} else if w.failures != 1 {
				t.Errorf("a single *Error, want %d failures listed: %v", w.failures, err)
			}
			if last.Kind != w.kind || last.Status != w.status {
				t.Errorf("last failure kind %q status %d, want %q %d: %v", last.Kind, last.Status, w.kind, w.status, err)
			}
			for _, s := range w.errContains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			for _, key := range []string{primaryKey, fallbackKey} {
				if strings.Contains(err.Error(), key) {
					t.Errorf("error text contains an API key: %v", err)
				}
			}
		})
	}
}

func TestChatSendsWhatTheCallerGave(t *testing.T) {
	t.Parallel()
	primary := llmtest.NewServer(t, llmtest.APIError(503, "busy"))
	fallback := llmtest.NewServer(t, llmtest.ToolCalls(llmtest.Call{ID: "call_1", Name: "cluster_problems", Args: `{"namespace":"prod"}`}))
	c, err := llm.New(llm.Config{Timeout: testTimeout, Endpoints: []llm.Endpoint{
		{Name: "primary", BaseURL: primary.URL(), APIKey: primaryKey, Model: "m-primary"},
		{Name: "fallback", BaseURL: fallback.URL(), APIKey: fallbackKey, Model: "m-fallback"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := chatRequest()
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}

	tc := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls || len(tc) != 1 ||
		tc[0].ID != "call_1" || tc[0].Function.Name != "cluster_problems" || tc[0].Function.Arguments != `{"namespace":"prod"}` {
		t.Errorf("tool calls = %+v (finish %q)", tc, resp.Choices[0].FinishReason)
	}
	if req.Model != "" {
		t.Errorf("Chat changed the caller's request (model %q)", req.Model)
	}

	for _, tt := range []struct {
		srv         *llmtest.Server
		model, auth string
	}{
		{primary, "m-primary", "Bearer " + primaryKey},
		{fallback, "m-fallback", "Bearer " + fallbackKey},
	} {
		recs := tt.srv.Requests()
		if len(recs) != 1 {
			t.Fatalf("%s: %d requests", tt.model, len(recs))
		}
		r := recs[0]
		if r.Request.Model != tt.model {
			t.Errorf("model sent = %q, want %q", r.Request.Model, tt.model)
		}
		if got := r.Header.Get("Authorization"); got != tt.auth {
			t.Errorf("Authorization = %q, want %q", got, tt.auth)
		}
		if len(r.Request.Messages) != 2 || r.Request.Messages[0].Content != "You are Noor." || r.Request.Messages[1].Content != "sweep the cluster" {
			t.Errorf("messages sent = %+v", r.Request.Messages)
		}
		if len(r.Request.Tools) != 1 || r.Request.Tools[0].Function.Name != "cluster_problems" ||
			!strings.Contains(string(r.Raw), `"properties":{"namespace":{"type":"string"}}`) {
			t.Errorf("tools sent = %s", r.Raw)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &raw); err != nil {
			t.Fatalf("raw body: %v", err)
		}
		if got, ok := raw["temperature"]; !ok || string(got) != "0" {
			t.Errorf(`temperature on the wire = %s (present %v), want an explicit 0`, got, ok)
		}
	}
}

func TestTemperature(t *testing.T) {
	t.Parallel()
	tempOf := func(t *testing.T, r llmtest.Recorded) (string, bool) {
		t.Helper()
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &raw); err != nil {
			t.Fatal(err)
		}
		v, ok := raw["temperature"]
		return string(v), ok
	}

	t.Run("configured temperature is sent", func(t *testing.T) {
		t.Parallel()
		s := llmtest.NewServer(t, llmtest.Text("a"), llmtest.Text("b"))
		c, err := llm.New(llm.Config{Temperature: 0.3, Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: "m"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Chat(context.Background(), chatRequest()); err != nil {
			t.Fatal(err)
		}
		req := chatRequest()
		req.Temperature = 0.9 // the request's own temperature wins
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		recs := s.Requests()
		if v, _ := tempOf(t, recs[0]); v != "0.3" {
			t.Errorf("temperature = %s, want 0.3", v)
		}
		if v, _ := tempOf(t, recs[1]); v != "0.9" {
			t.Errorf("temperature = %s, want 0.9", v)
		}
	})

	t.Run("an endpoint that rejects temperature gets it once more without, and is remembered", func(t *testing.T) {
		t.Parallel()
		s := llmtest.NewServer(t,
			llmtest.APIError(400, "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."),
			llmtest.Text("first"),
			llmtest.Text("second"),
		)
		c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: "o-model"}}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(context.Background(), chatRequest())
		if err != nil {
			t.Fatalf("Chat: %v", err)
		}
		if resp.Attempts != 2 || resp.Choices[0].Message.Content != "first" {
			t.Errorf("attempts %d content %q", resp.Attempts, resp.Choices[0].Message.Content)
		}
		if _, err := c.Chat(context.Background(), chatRequest()); err != nil {
			t.Fatalf("second Chat: %v", err)
		}
		recs := s.Requests()
		if len(recs) != 3 {
			t.Fatalf("%d requests, want 3", len(recs))
		}
		for i, want := range []bool{true, false, false} {
			if _, ok := tempOf(t, recs[i]); ok != want {
				t.Errorf("request %d: temperature present %v, want %v", i, ok, want)
			}
		}
	})

	t.Run("a 400 about something else is not resent", func(t *testing.T) {
		t.Parallel()
		s := llmtest.NewServer(t, llmtest.APIError(400, "context length exceeded"), llmtest.Text("never sent"))
		c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: "m"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Chat(context.Background(), chatRequest()); err == nil {
			t.Fatal("want an error")
		}
		if n := len(s.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

func TestChatStopsWhenTheCallerDoes(t *testing.T) {
	t.Parallel()
	t.Run("canceled while the primary hangs", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		primary := llmtest.NewServer(t, llmtest.When(func(openai.ChatCompletionRequest) bool {
			cancel() // the caller gives up once the request is in flight
			return true
		}, llmtest.Hang()))
		fallback := llmtest.NewServer(t, llmtest.Text("never sent"))
		c, err := llm.New(llm.Config{Timeout: time.Minute, Endpoints: []llm.Endpoint{
			{BaseURL: primary.URL(), Model: "m"}, {BaseURL: fallback.URL(), Model: "m"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Chat(ctx, chatRequest())
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindCanceled || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want kind canceled wrapping context.Canceled", err)
		}
		if n := len(fallback.Requests()); n != 0 {
			t.Errorf("fallback received %d requests after the caller gave up", n)
		}
	})

	t.Run("the caller's deadline bounds the call", func(t *testing.T) {
		t.Parallel()
		primary := llmtest.NewServer(t, llmtest.Hang())
		fallback := llmtest.NewServer(t, llmtest.Text("never sent"))
		c, err := llm.New(llm.Config{Timeout: time.Minute, Endpoints: []llm.Endpoint{
			{BaseURL: primary.URL(), Model: "m"}, {BaseURL: fallback.URL(), Model: "m"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = c.Chat(ctx, chatRequest())
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s despite a 100ms caller deadline", d)
		}
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindCanceled || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want kind canceled wrapping the caller's deadline", err)
		}
		if n := len(fallback.Requests()); n != 0 {
			t.Errorf("fallback received %d requests after the caller's deadline", n)
		}
	})

	t.Run("already canceled: nothing sent", func(t *testing.T) {
		t.Parallel()
		s := llmtest.NewServer(t, llmtest.Text("never sent"))
		c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: "m"}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = c.Chat(ctx, chatRequest())
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindCanceled {
			t.Fatalf("err = %v, want kind canceled", err)
		}
		if n := len(s.Requests()); n != 0 {
			t.Errorf("%d requests sent on a canceled context", n)
		}
	})
}

func TestChatRefusesStreaming(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t)
	c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := chatRequest()
	req.Stream = true
	_, err = c.Chat(context.Background(), req)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindInvalidRequest {
		t.Fatalf("err = %v, want invalid_request", err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Token counts every completion reply reports unless built WithUsage.
const (
	DefaultPromptTokens     = 10
	DefaultCompletionTokens = 5
)

// created is the fixed "created" timestamp of every answer (deterministic).
const created = 1700000000

// Reply is one scripted answer. Build it with the constructors below.
type Reply struct {
	serve   func(x *exchange)
	match   func(openai.ChatCompletionRequest) bool
	endless bool
	usage   openai.Usage
	text    *string // the content of a Text reply
}

// exchange is one request being answered.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	req   openai.ChatCompletionRequest
	n     int    // 1-based number of the request on this server
	reply *Reply // the reply being served (its usage)
}

// Call is a tool call the model makes. Args is raw JSON text and may be
// invalid on purpose. An empty ID becomes "call_<request number>_<index>".
type Call struct {
	ID   string
	Name string
	Args string
}

var defaultUsage = openai.Usage{
	PromptTokens:     DefaultPromptTokens,
	CompletionTokens: DefaultCompletionTokens,
	TotalTokens:      DefaultPromptTokens + DefaultCompletionTokens,
}

// Text answers an assistant message with content s, finish_reason "stop".
func Text(s string) Reply {
	r := completion(func(int) wireMessage {
		return wireMessage{Role: "assistant", Content: &s}
	}, "stop")
	r.text = &s
	return r
}

// Content is the content of a reply built with Text (or JSON); ok is false
// for any other reply (a policy adds to its answer with it).
func (r Reply) Content() (s string, ok bool) {
	if r.text == nil {
		return "", false
	}
	return *r.text, true
}

// JSON answers an assistant message whose content is v marshalled (for a
// structured-output pass). If v cannot be marshalled the server answers 500
// saying so.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return Status(http.StatusInternalServerError,
			string(errorBody("llmtest", fmt.Sprintf("llmtest: JSON reply: cannot marshal %T: %v", v, err))), "application/json")
	}
	return Text(string(b))
}

// ToolCalls answers an assistant message with tool calls, finish_reason
// "tool_calls" and no content.
func ToolCalls(calls ...Call) Reply { return toolCalls(nil, calls) }

func toolCalls(content *string, calls []Call) Reply {
	calls = append([]Call(nil), calls...)
	return completion(func(n int) wireMessage {
		m := wireMessage{Role: "assistant", Content: content}
		for i, c := range calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			m.ToolCalls = append(m.ToolCalls, wireToolCall{
				ID: id, Type: "function", Function: wireFunction{Name: c.Name, Arguments: c.Args},
			})
		}
		return m
	}, "tool_calls")
}

// ToolCallsText answers an assistant message with content s beside the
// tool calls (a model that acts and reports in one reply).
func ToolCallsText(s string, calls ...Call) Reply { return toolCalls(&s, calls) }

// Endless answers every request it matches with the same tool call and is
// never consumed (for iteration-ceiling tests). Each answer has a fresh ID.
func Endless(name, args string) Reply {
	r := ToolCalls(Call{Name: name, Args: args})
	r.endless = true
	return r
}

// WithUsage makes a completion reply report the given token counts.
func WithUsage(r Reply, prompt, completion int) Reply {
	r.usage = openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return r
}

// WithPromptTokens makes a completion reply report prompt tokens, keeping
// its completion tokens (a policy that measures each request it answers).
func WithPromptTokens(r Reply, prompt int) Reply {
	return WithUsage(r, prompt, r.usage.CompletionTokens)
}

// When restricts r to requests for which match is true; requests that do
// not match skip it and take a later reply of the script.
func When(match func(openai.ChatCompletionRequest) bool, r Reply) Reply {
	inner := r.match
	r.match = func(req openai.ChatCompletionRequest) bool {
		return match(req) && (inner == nil || inner(req))
	}
	return r
}

// Hang never answers: it holds the request until the client gives up or
// the server closes (a saturated node accepts the connection and holds it).
// On close the connection is dropped without an answer.
func Hang() Reply {
	return Reply{serve: func(x *exchange) {
		select {
		case <-x.r.Context().Done():
		case <-x.s.done:
		}
		panic(http.ErrAbortHandler) // close the connection, write nothing
	}}
}

// Slow waits d (or until the client gives up or the server closes), then
// answers r.
func Slow(d time.Duration, r Reply) Reply {
	inner := r.serve
	r.serve = func(x *exchange) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			inner(x)
		case <-x.r.Context().Done():
			panic(http.ErrAbortHandler)
		case <-x.s.done:
			panic(http.ErrAbortHandler)
		}
	}
	return r
}

// Status answers code with body as is, e.g.
// Status(502, "<html><title>502 Bad Gateway</title></html>", "text/html").
func Status(code int, body, contentType string) Reply {
	return Reply{serve: func(x *exchange) {
		if contentType != "" {
			x.w.Header().Set("Content-Type", contentType)
		}
		x.w.WriteHeader(code)
		_, _ = x.w.Write([]byte(body))
	}}
}

// APIError answers code with an OpenAI-shaped JSON error carrying message.
func APIError(code int, message string) Reply {
	return Status(code, string(errorBody("llmtest_error", message)), "application/json")
}

// RateLimited answers 429 the way OpenAI does, with Retry-After.
func RateLimited() Reply {
	return Reply{serve: func(x *exchange) {
		x.w.Header().Set("Retry-After", "1")
		writeError(x.w, http.StatusTooManyRequests, "requests", "Rate limit reached for requests")
	}}
}

// Disconnect reads the request and closes the connection without an answer
// (a reset gateway or a crashed node).
func Disconnect() Reply {
	return Reply{serve: func(x *exchange) {
		hj, ok := x.w.(http.Hijacker)
		if !ok {
			writeError(x.w, http.StatusInternalServerError, "llmtest", "llmtest: Disconnect needs an HTTP/1 connection")
			return
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			writeError(x.w, http.StatusInternalServerError, "llmtest", "llmtest: hijack: "+err.Error())
			return
		}
		_ = conn.Close()
	}}
}

// completion builds a reply answering one chat completion choice.
func completion(msg func(n int) wireMessage, finish string) Reply {
	return Reply{usage: defaultUsage, serve: func(x *exchange) {
		u := x.reply.usage
		writeJSON(x.w, http.StatusOK, wireCompletion{
			ID:                fmt.Sprintf("chatcmpl-llmtest-%d", x.n),
			Object:            "chat.completion",
			Created:           created,
			Model:             x.req.Model,
			Choices:           []wireChoice{{Index: 0, Message: msg(x.n), FinishReason: finish}},
			Usage:             wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens},
			SystemFingerprint: "fp_llmtest",
		})
	}}
}

// The wire format of a chat completion, as the OpenAI API writes it
// (content is null on a tool-call message, logprobs is null).
type wireCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             wireUsage    `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

package llm

import (
	"errors"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The answer cap (Config.MaxCompletionTokens) is sent as max_tokens, the
// field every OpenAI-compatible server reads (vLLM, Ollama, llama.cpp's
// server, LM Studio, Azure). OpenAI's reasoning models refuse it with a
// 400 "Unsupported parameter: 'max_tokens' is not supported with this
// model. Use 'max_completion_tokens' instead." (go-openai refuses it before
// sending for the o1/o3/o4/gpt-5 names it knows, so those start with
// max_completion_tokens). Such a refusal makes the client send the request
// again with max_completion_tokens, and a refusal of that one without any
// cap; the endpoint remembers the field for the client's lifetime, so each
// resend happens at most twice per endpoint, ever, outside the retry
// budget — like the structured-output fallback (format.go).
const (
	capMaxTokens = iota
	capMaxCompletionTokens
	capNone
)

// initialCapField is the field to start with for model: go-openai
// refuses max_tokens, before sending, for the reasoning models it knows —
// asked of its own validator, so the list is the library's.
func initialCapField(model string) int {
	//lint:ignore SA1019 the question is whether the library refuses max_tokens for model
	err := openai.NewReasoningValidator().Validate(openai.ChatCompletionRequest{Model: model, MaxTokens: 1})
	if errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated) {
		return capMaxCompletionTokens
	}
	return capMaxTokens
}

// capFieldName names a field for logs.
func capFieldName(f int) string {
	switch f {
	case capMaxTokens:
		return "max_tokens"
	case capMaxCompletionTokens:
		return "max_completion_tokens"
	}
	return "none"
}

// capped reports whether the client caps req itself: a cap is configured
// and the request set none of its own.
func (c *Client) capped(req openai.ChatCompletionRequest) bool {
	//lint:ignore SA1019 max_tokens is the field OpenAI-compatible servers read (see above)
	return c.maxTokens > 0 && req.MaxTokens == 0 && req.MaxCompletionTokens == 0
}

// withCap sets the answer cap on req in the field r accepts.
func (c *Client) withCap(r *route, req openai.ChatCompletionRequest) openai.ChatCompletionRequest {
	if !c.capped(req) {
		return req
	}
	switch int(r.capField.Load()) {
	case capMaxTokens:
		//lint:ignore SA1019 max_tokens is the field OpenAI-compatible servers read (see above)
		req.MaxTokens = c.maxTokens
	case capMaxCompletionTokens:
		req.MaxCompletionTokens = c.maxTokens
	}
	return req
}

// nextCapField reports the field to try after fail, when fail is r
// refusing the field the cap was sent in and a looser one is left.
func (c *Client) nextCapField(r *route, req openai.ChatCompletionRequest, fail *Error) (int, bool) {
	if !c.capped(req) || (fail.Kind != KindHTTP4xx && fail.Kind != KindInvalidRequest) {
		return 0, false
	}
	cur := int(r.capField.Load())
	if cur >= capNone {
		return 0, false
	}
	msg := strings.ToLower(fail.Msg)
	named := map[int][]string{
		capMaxTokens:           {"max_tokens", "maxtokens"},
		capMaxCompletionTokens: {"max_completion_tokens", "maxcompletiontokens"},
	}[cur]
	for _, s := range named {
		// "max_tokens is too large" asks for a smaller value, not another
		// field: that is a setting to fix (docs/MANUAL.md, "Model mode").
		if strings.Contains(msg, s) && !strings.Contains(msg, "too large") {
			return cur + 1, true
		}
	}
	return 0, false
}

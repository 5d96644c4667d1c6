package llm

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// Token estimation. kubecrew talks to any OpenAI-compatible model (GPT,
// Llama, Qwen, Mistral…), each with its own tokenizer, so no one tokenizer
// is right; the count is estimated, on the safe side:
//
//   - text: one token per BytesPerToken (3) bytes, rounded up. English prose
//     runs at about 4 bytes a token in the common tokenizers and JSON, YAML
//     and Kubernetes names at about 3, so the estimate is at or above the
//     real count for what the agents send;
//   - each message adds MessageOverhead (4) tokens (role and separators of
//     the chat template), each tool call its name and arguments;
//   - tool schemas count as their JSON text.
//
// Where a model answered, its own usage (Response.Usage) is the real count;
// the estimate is for what is about to be sent.
const (
	BytesPerToken   = 3
	MessageOverhead = 4
)

// EstimateTokens estimates the tokens of a text.
func EstimateTokens(s string) int {
	return (len(s) + BytesPerToken - 1) / BytesPerToken
}

// EstimateMessage estimates the tokens one chat message costs in a request.
func EstimateMessage(m openai.ChatCompletionMessage) int {
	n := MessageOverhead + EstimateTokens(m.Content) + EstimateTokens(m.Name)
	for _, p := range m.MultiContent {
		n += EstimateTokens(p.Text)
	}
	for _, tc := range m.ToolCalls {
		n += MessageOverhead + EstimateTokens(tc.Function.Name) + EstimateTokens(tc.Function.Arguments)
	}
	return n
}

// EstimateTools estimates the tokens of the tool schemas sent with a request.
func EstimateTools(tools []openai.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return EstimateTokens(string(raw))
}

// EstimateRequest estimates the prompt tokens of a chat request: its
// messages, its tool schemas and its response format's schema.
func EstimateRequest(req openai.ChatCompletionRequest) int {
	n := EstimateTools(req.Tools)
	for _, m := range req.Messages {
		n += EstimateMessage(m)
	}
	if req.ResponseFormat != nil {
		if raw, err := json.Marshal(req.ResponseFormat); err == nil {
			n += EstimateTokens(string(raw))
		}
	}
	return n
}

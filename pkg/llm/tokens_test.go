package llm_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/llm"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abc", 1},
		{"abcd", 2},
		{strings.Repeat("x", 3000), 1000},
		{"héllo", 2}, // bytes, not runes: 6 bytes
	} {
		if got := llm.EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestEstimateRequestCountsMessagesCallsToolsAndFormat(t *testing.T) {
	base := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: strings.Repeat("s", 300)},
		{Role: "user", Content: strings.Repeat("u", 30)},
	}}
	n0 := llm.EstimateRequest(base)
	if want := 100 + 10 + 2*llm.MessageOverhead; n0 != want {
		t.Fatalf("two messages = %d, want %d", n0, want)
	}
	withCall := base
	withCall.Messages = append(append([]openai.ChatCompletionMessage(nil), base.Messages...), openai.ChatCompletionMessage{
		Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c", Type: "function", Function: openai.FunctionCall{Name: "echo", Arguments: strings.Repeat("a", 60)}}},
	})
	if got, want := llm.EstimateRequest(withCall), n0+2*llm.MessageOverhead+2+20; got != want {
		t.Errorf("with a tool call = %d, want %d", got, want)
	}
	withTools := base
	withTools.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "echo", Description: strings.Repeat("d", 600)}}}
	if got := llm.EstimateRequest(withTools); got < n0+200 {
		t.Errorf("with a 600-byte tool schema = %d, want at least %d", got, n0+200)
	}
	withFormat := base
	withFormat.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	if got := llm.EstimateRequest(withFormat); got <= n0 {
		t.Errorf("with a response format = %d, want more than %d", got, n0)
	}
}

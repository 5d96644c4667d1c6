package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// openAIMaxTokensRefusal is OpenAI's documented answer when a reasoning
// model is sent max_tokens.
const openAIMaxTokensRefusal = `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`

// The answer cap reaches the wire as max_tokens, as max_completion_tokens
// where the endpoint asks for it, and not at all where it refuses both;
// the endpoint remembers the field, so a later call sends the right one
// first.
func TestAnswerCapOnTheWire(t *testing.T) {
	t.Parallel()
	type sent struct{ maxTokens, maxCompletion string } // "" = absent
	for _, tc := range []struct {
		name     string
		model    string
		cap      int
		ownCap   int // the request's own max_tokens
		script   []llmtest.Reply
		wantErr  bool
		want     []sent // every request of two calls (one when wantErr)
		wantResp int    // attempts of the first call
	}{
		{name: "sent as max_tokens", model: "qwen2.5-coder", cap: 4000,
			script: []llmtest.Reply{llmtest.Text("a"), llmtest.Text("b")},
			want:   []sent{{"4000", ""}, {"4000", ""}}, wantResp: 1},
		{name: "OpenAI's refusal of max_tokens: max_completion_tokens, remembered", model: "deployment-x", cap: 4000,
			script: []llmtest.Reply{llmtest.Status(400, openAIMaxTokensRefusal, "application/json"), llmtest.Text("a"), llmtest.Text("b")},
			want:   []sent{{"4000", ""}, {"", "4000"}, {"", "4000"}}, wantResp: 2},
		{name: "both fields refused: no cap, remembered", model: "m", cap: 4000,
			script: []llmtest.Reply{
				llmtest.APIError(400, "Unrecognized request argument supplied: max_tokens"),
				llmtest.APIError(400, "Unrecognized request argument supplied: max_completion_tokens"),
				llmtest.Text("a"), llmtest.Text("b")},
			want: []sent{{"4000", ""}, {"", "4000"}, {"", ""}, {"", ""}}, wantResp: 3},
		{name: "a reasoning model go-openai knows starts with max_completion_tokens", model: "o3-mini", cap: 2000,
			script: []llmtest.Reply{llmtest.Text("a"), llmtest.Text("b")},
			want:   []sent{{"", "2000"}, {"", "2000"}}, wantResp: 1},
		{name: "no cap configured: neither field", model: "m",
			script: []llmtest.Reply{llmtest.Text("a"), llmtest.Text("b")},
			want:   []sent{{"", ""}, {"", ""}}, wantResp: 1},
		{name: "the request's own cap wins", model: "m", cap: 4000, ownCap: 64,
			script: []llmtest.Reply{llmtest.Text("a"), llmtest.Text("b")},
			want:   []sent{{"64", ""}, {"64", ""}}, wantResp: 1},
		{name: "too large is a setting to fix, not resent", model: "m", cap: 100000,
			script:  []llmtest.Reply{llmtest.APIError(400, "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.")},
			wantErr: true, want: []sent{{"100000", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := llmtest.NewServer(t, tc.script...)
			c, err := llm.New(llm.Config{MaxCompletionTokens: tc.cap, Endpoints: []llm.Endpoint{{BaseURL: s.URL(), Model: tc.model}}})
			if err != nil {
				t.Fatal(err)
			}
			req := chatRequest()
			//lint:ignore SA1019 the request's own max_tokens, as a caller may set it
			req.MaxTokens = tc.ownCap
			resp, err := c.Chat(context.Background(), req)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
			} else {
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if resp.Attempts != tc.wantResp {
					t.Errorf("first call: %d attempts, want %d", resp.Attempts, tc.wantResp)
				}
				if _, err := c.Chat(context.Background(), req); err != nil {
					t.Fatalf("second Chat: %v", err)
				}
			}
			recs := s.Requests()
			if len(recs) != len(tc.want) {
				t.Fatalf("%d requests, want %d", len(recs), len(tc.want))
			}
			for i, w := range tc.want {
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(recs[i].Raw, &raw); err != nil {
					t.Fatal(err)
				}
				if got := (sent{string(raw["max_tokens"]), string(raw["max_completion_tokens"])}); got != w {
					t.Errorf("request %d: max_tokens %q max_completion_tokens %q, want %q %q", i, got.maxTokens, got.maxCompletion, w.maxTokens, w.maxCompletion)
				}
			}
		})
	}
}

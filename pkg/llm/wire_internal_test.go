package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestSpliceZeroTemperature(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"added first", `{"model":"m","messages":[]}`, `{"temperature":0,"model":"m","messages":[]}`},
		{"empty object", `{}`, `{"temperature":0}`},
		{"leading space", " { \"model\":\"m\"}", `{"temperature":0,"model":"m"}`},
		{"present: untouched", `{"model":"m","temperature":0.7}`, `{"model":"m","temperature":0.7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, "http://x/v1/chat/completions", bytes.NewBufferString(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if err := spliceZeroTemperature(req); err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(req.Body)
			if string(got) != tt.want || !json.Valid(got) || req.ContentLength != int64(len(got)) {
				t.Errorf("body %s (len %d), want %s", got, req.ContentLength, tt.want)
			}
			again, _ := req.GetBody()
			replay, _ := io.ReadAll(again)
			if string(replay) != tt.want {
				t.Errorf("GetBody gives %s", replay)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, "http://x", bytes.NewBufferString(`[1]`))
	if err := spliceZeroTemperature(req); err == nil {
		t.Error("a non-object body was accepted")
	}
}

func TestServerMessage(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{`{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}`, "Incorrect API key"},
		{`{"error":"model 'x' not found"}`, "model 'x' not found"},
		{`{"message":"no route"}`, "no route"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{"plain\n  text", "plain text"},
		{``, "empty body"},
	}
	for _, tt := range tests {
		if got := serverMessage([]byte(tt.body)); got != tt.want {
			t.Errorf("serverMessage(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestInitialCapField: the models go-openai refuses max_tokens for (its
// own validator decides) start with max_completion_tokens; any other
// model, a deployment name included, with max_tokens.
func TestInitialCapField(t *testing.T) {
	for model, want := range map[string]int{
		"o1-mini": capMaxCompletionTokens, "o3-mini": capMaxCompletionTokens, "o4-mini": capMaxCompletionTokens,
		"gpt-5": capMaxCompletionTokens, "gpt-6-sol": capMaxCompletionTokens, "gpt-6-astra": capMaxCompletionTokens,
		"gpt-4o": capMaxTokens, "qwen2.5-coder": capMaxTokens, "deployment-x": capMaxTokens,
	} {
		if got := initialCapField(model); got != want {
			t.Errorf("initialCapField(%q) = %s, want %s", model, capFieldName(got), capFieldName(want))
		}
	}
}

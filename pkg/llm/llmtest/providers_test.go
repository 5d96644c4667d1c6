package llmtest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// Every provider answer is served as its file says: 2xx ones decode as a
// chat completion with go-openai, the others carry their status, headers
// and an error body. The 2xx quirks go-openai alone cannot read (pkg/llm's
// TestServerShapes) decode to no choice or fail.
func TestProviderAnswersServeAsRecorded(t *testing.T) {
	t.Parallel()
	names := llmtest.ProviderNames()
	if len(names) < 10 {
		t.Fatalf("provider answers = %v", names)
	}
	quirks := map[string]bool{"llamacpp_tool_args_object": true, "litellm_200_error": true, "azure_empty_choices": true}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.Provider(name))
			resp, err := client(srv).CreateChatCompletion(context.Background(), chatReq())
			ok := !strings.Contains(name, "_4") && !strings.Contains(name, "_5") && !quirks[name]
			if ok && (err != nil || len(resp.Choices) != 1) {
				t.Fatalf("%s: %v %+v", name, err, resp)
			}
			if !ok && err == nil && len(resp.Choices) > 0 {
				t.Fatalf("%s answered a completion, want an error", name)
			}
		})
	}
	srv := llmtest.NewServer(t, llmtest.WithHeader(llmtest.Provider("azure_429_token_rate"), "retry-after-ms", "25"), llmtest.Provider("no_such_answer"))
	for i, want := range []string{"25", ""} {
		r, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		switch i {
		case 0:
			if r.StatusCode != 429 || r.Header.Get("retry-after-ms") != want || r.Header.Get("Retry-After") != "6" {
				t.Errorf("azure 429: %d %v", r.StatusCode, r.Header)
			}
		case 1:
			if r.StatusCode != 500 || !strings.Contains(string(body), "azure_429_token_rate") {
				t.Errorf("unknown answer: %d %s", r.StatusCode, body)
			}
		}
	}
}

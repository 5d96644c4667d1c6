package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	good := llm.Endpoint{BaseURL: "http://gateway:8080/v1", Model: "qwen3"}
	tests := []struct {
		name    string
		cfg     llm.Config
		wantErr []string // substrings; nil means New succeeds
	}{
		{"one endpoint", llm.Config{Endpoints: []llm.Endpoint{good}}, nil},
		{"no endpoint", llm.Config{}, []string{"no endpoint", "LLM_BASE_URL", "AGENT_MODEL"}},
		{"only blank endpoints", llm.Config{Endpoints: []llm.Endpoint{{}, {Name: "fallback"}}}, []string{"no endpoint"}},
		{"blank fallback skipped", llm.Config{Endpoints: []llm.Endpoint{good, {APIKey: "k"}}}, nil},
		{"model without URL", llm.Config{Endpoints: []llm.Endpoint{{Model: "m"}}}, []string{"base URL is empty", "LLM_BASE_URL"}},
		{"URL without model", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "http://x/v1"}}}, []string{"model is empty", "AGENT_MODEL"}},
		{"fallback URL without model", llm.Config{Endpoints: []llm.Endpoint{good, {BaseURL: "http://y/v1"}}}, []string{"endpoint fallback", "LLM_FALLBACK_MODEL"}},
		{"model none", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "http://x/v1", Model: "none"}}}, []string{"deterministic mode"}},
		{"not http", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "gateway:8080/v1", Model: "m"}}}, []string{"scheme must be http or https"}},
		{"no host", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "http:///v1", Model: "m"}}}, []string{"no host"}},
		{"unparsable URL", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "http://[::1/v1", Model: "m"}}}, []string{"not a URL"}},
		{"duplicate names", llm.Config{Endpoints: []llm.Endpoint{good, {Name: "primary", BaseURL: "http://y/v1", Model: "m"}}}, []string{"duplicate name"}},
		{"max retries 1", llm.Config{Endpoints: []llm.Endpoint{good}, MaxRetries: 1}, nil},
		{"no retries", llm.Config{Endpoints: []llm.Endpoint{good}, MaxRetries: -1}, nil},
		{"max retries 2", llm.Config{Endpoints: []llm.Endpoint{good}, MaxRetries: 2}, []string{"max retries 2", "at most 1"}},
		{"negative timeout", llm.Config{Endpoints: []llm.Endpoint{good}, Timeout: -time.Second}, []string{"must be positive"}},
		{"HTTP client timeout below the attempt timeout", llm.Config{Endpoints: []llm.Endpoint{good}, Timeout: time.Minute,
			HTTPClient: &http.Client{Timeout: time.Second}}, []string{"leave it zero"}},
		{"every problem reported", llm.Config{Endpoints: []llm.Endpoint{{Model: "m"}}, MaxRetries: 5}, []string{"base URL is empty", "max retries 5"}},
		{"password in URL not echoed", llm.Config{Endpoints: []llm.Endpoint{{BaseURL: "ftp://user:hunter2@x/v1", Model: "m"}}}, []string{"scheme"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := llm.New(tt.cfg)
			if tt.wantErr == nil {
				if err != nil || c == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want an error mentioning %q", tt.wantErr)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks a URL password: %v", err)
			}
		})
	}
}

func TestDefaultsAndBounds(t *testing.T) {
	t.Parallel()
	c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{
		{BaseURL: "http://a/v1", Model: "big"},
		{},
		{BaseURL: "http://b/v1", Model: "small"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model() != "big" {
		t.Errorf("Model = %q", c.Model())
	}
	eps := c.Endpoints()
	if len(eps) != 2 || eps[0].Name != "primary" || eps[1].Name != "fallback" {
		t.Errorf("endpoints = %v", eps)
	}
	if c.Timeout() != llm.DefaultTimeout {
		t.Errorf("Timeout = %s", c.Timeout())
	}
	// Two endpoints plus max_retries=1: at most three requests, each bounded.
	if got, want := c.MaxCallDuration(), 3*llm.DefaultTimeout; got != want {
		t.Errorf("MaxCallDuration = %s, want %s", got, want)
	}

	c, err = llm.New(llm.Config{Timeout: 400 * time.Second, MaxRetries: -1, Endpoints: []llm.Endpoint{{BaseURL: "http://a/v1", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MaxCallDuration(); got != 400*time.Second {
		t.Errorf("MaxCallDuration without retries = %s, want 400s", got)
	}
}

func TestAPIKeyIsNeverPrintedOrLogged(t *testing.T) {
	t.Parallel()
	ep := llm.Endpoint{Name: "primary", BaseURL: "https://user:pw@gw.example/v1", APIKey: primaryKey, Model: "m"}

	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	log.Info("endpoint", zap.Any("endpoint", ep), zap.Stringer("stringer", ep))
	js, _ := json.Marshal(ep)
	printed := []string{fmt.Sprint(ep), fmt.Sprintf("%v %+v %#v %s", ep, ep, ep, ep), string(js)}

	// A call that fails over, meets an echoed key and succeeds, with debug logs.
	primary := llmtest.NewServer(t, llmtest.APIError(503, "bad key "+primaryKey))
	fallback := llmtest.NewServer(t, llmtest.Disconnect())
	last := llmtest.NewServer(t, llmtest.Disconnect(), llmtest.Text("ok"))
	c, err := llm.New(llm.Config{Logger: log, Timeout: testTimeout, Endpoints: []llm.Endpoint{
		{Name: "primary", BaseURL: primary.URL(), APIKey: primaryKey, Model: "m"},
		{Name: "fallback", BaseURL: fallback.URL(), APIKey: fallbackKey, Model: "m"},
		{Name: "last", BaseURL: last.URL(), APIKey: fallbackKey, Model: "m"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(context.Background(), chatRequest())
	if err != nil || resp.Endpoint != "last" || resp.Attempts != 4 {
		t.Fatalf("Chat = %+v, %v; want last endpoint after 4 attempts", resp, err)
	}
	if got := last.Requests()[0].Header.Get("Authorization"); got != "Bearer "+fallbackKey {
		t.Errorf("Authorization = %q", got)
	}

	entries := logs.All()
	if len(entries) < 3 {
		t.Fatalf("only %d log entries; the failovers and retry should be logged", len(entries))
	}
	for _, e := range entries {
		printed = append(printed, e.Message+" "+fmt.Sprint(e.ContextMap()))
	}
	for _, s := range printed {
		for _, secret := range []string{primaryKey, fallbackKey, ":pw@"} {
			if strings.Contains(s, secret) {
				t.Errorf("secret %q printed: %s", secret, s)
			}
		}
	}
}

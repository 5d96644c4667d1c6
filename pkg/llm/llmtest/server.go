// Package llmtest is a scripted OpenAI-compatible HTTP server for tests.
//
// It speaks the real wire format of POST /v1/chat/completions (and answers
// GET /v1/models), so the code under test runs its real HTTP client, JSON
// encoding and error handling:
//
//	srv := llmtest.NewServer(t,
//		llmtest.ToolCalls(llmtest.Call{Name: "cluster_problems", Args: `{}`}),
//		llmtest.Text("all healthy"),
//	)
//	client, _ := llm.New(llm.Config{Endpoints: []llm.Endpoint{{BaseURL: srv.URL(), Model: "m"}}})
//
// Each chat request takes the first reply of the script that matches it (every
// reply matches unless built with When) and consumes it; Endless replies are
// never consumed. When no reply is left the server answers 500 with the
// OpenAI error message "llmtest: script exhausted", so a test sees an
// unscripted call. Every request is recorded, in order, with its decoded
// body, headers and raw bytes.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Server is a scripted OpenAI-compatible endpoint.
type Server struct {
	srv       *httptest.Server
	done      chan struct{} // closed by Close: releases Hang and Slow replies
	closeOnce sync.Once

	mu       sync.Mutex
	script   []Reply
	policy   func(openai.ChatCompletionRequest) Reply // answers when no script reply matches
	recorded []Recorded
}

// Recorded is one request the server received.
type Recorded struct {
	Method string
	Path   string
	// Request is the decoded body of a chat completion request (zero for
	// other paths or an undecodable body).
	Request openai.ChatCompletionRequest
	Header  http.Header
	Raw     []byte
}

// NewServer starts a server that answers with script, in order. It is closed
// on t.Cleanup.
func NewServer(t testing.TB, script ...Reply) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{}), script: append([]Reply(nil), script...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// NewPolicyServer starts a server that answers every chat request with
// policy(request): a scripted model that decides from the content of each
// request (its tools, the task, the tool results so far) instead of from a
// fixed script, so it can play any scenario it has never seen. Replies
// pushed with Push still go first. The caller closes it (Close); it needs
// no testing.TB, so a program (the eval suite) can run one.
func NewPolicyServer(policy func(openai.ChatCompletionRequest) Reply) *Server {
	s := &Server{done: make(chan struct{}), policy: policy}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the base URL, ending in /v1 (usable as llm.Endpoint.BaseURL).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Push appends replies to the script.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Requests returns every request received, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.recorded...)
}

// Pending is the number of replies left in the script (Endless ones included).
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Close releases hanging requests and shuts the server down; later requests
// get "connection refused". It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	isChat := r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions"
	var req openai.ChatCompletionRequest
	var decodeErr error
	if isChat && err == nil {
		decodeErr = json.Unmarshal(raw, &req)
		if decodeErr == nil {
			rec.Request = req
		}
	}
	s.mu.Lock()
	s.recorded = append(s.recorded, rec)
	n := len(s.recorded)
	s.mu.Unlock()

	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmtest: reading body: "+err.Error())
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, http.StatusOK, map[string]any{
			"object": "list",
			"data":   []map[string]any{{"id": "llmtest", "object": "model", "created": created, "owned_by": "llmtest"}},
		})
	case !isChat:
		writeError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("llmtest: unknown path %s %s", r.Method, r.URL.Path))
	case decodeErr != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmtest: request body is not a chat completion request: "+decodeErr.Error())
	case req.Model == "":
		writeError(w, http.StatusBadRequest, "invalid_request_error", "you must provide a model parameter")
	case len(req.Messages) == 0:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "'messages' must contain at least one message")
	default:
		reply, ok := s.next(req)
		if !ok {
			writeError(w, http.StatusInternalServerError, "llmtest_script_exhausted",
				fmt.Sprintf("llmtest: script exhausted (request %d has no reply left)", n))
			return
		}
		reply.serve(&exchange{s: s, w: w, r: r, req: req, n: n, reply: &reply})
	}
}

// next takes the first reply that matches req; it consumes it unless the
// reply is endless.
func (s *Server) next(req openai.ChatCompletionRequest) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.script {
		if r.match != nil && !r.match(req) {
			continue
		}
		if !r.endless {
			s.script = append(s.script[:i:i], s.script[i+1:]...)
		}
		return r, true
	}
	if s.policy != nil {
		return s.policy(req), true
	}
	return Reply{}, false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		code, body = http.StatusInternalServerError, errorBody("llmtest", "llmtest: encoding the answer: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(errorBody(typ, msg))
}

// errorBody is the OpenAI error shape: {"error":{"message","type","param","code"}}.
func errorBody(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
	return b
}

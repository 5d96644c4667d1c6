package eval

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// Receiver records every body posted to it: the chat receiver the agents'
// report webhooks point at.
type Receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// NewReceiver starts a receiver that answers 200 to any POST.
func NewReceiver() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 8<<20))
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	return r
}

// URL is the receiver's base URL.
func (r *Receiver) URL() string { return r.srv.URL }

// Take returns the bodies received since the last Take and forgets them.
func (r *Receiver) Take() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.bodies
	r.bodies = nil
	return out
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// ModelTap is where the agents' model calls go: the scripted policy server,
// or a recording proxy in front of a real endpoint. Either way every
// request body is kept for the judges.
type ModelTap interface {
	URL() string      // base URL for LLM_BASE_URL (ends in /v1 for the scripted one)
	Bodies() [][]byte // every chat request body received, in order
	Close()
}

// Scripted is policy answering as a served model does: after delay (a
// real model's seconds per call; 0 answers at once), its usage giving the
// prompt tokens of each request as estimated on the wire
// (llm.EstimateRequest, as the context budget counts), so the figures
// follow what the agents send, not the policy's fixed numbers.
func Scripted(policy func(openai.ChatCompletionRequest) llmtest.Reply, delay time.Duration) func(openai.ChatCompletionRequest) llmtest.Reply {
	return func(req openai.ChatCompletionRequest) llmtest.Reply {
		r := llmtest.WithPromptTokens(policy(req), llm.EstimateRequest(req))
		if delay > 0 {
			r = llmtest.Slow(delay, r)
		}
		return r
	}
}

// policyTap is the scripted model.
type policyTap struct{ s *llmtest.Server }

// NewPolicyTap serves policy as an OpenAI-compatible model.
func NewPolicyTap(policy func(openai.ChatCompletionRequest) llmtest.Reply) ModelTap {
	return policyTap{llmtest.NewPolicyServer(policy)}
}

func (p policyTap) URL() string { return p.s.URL() }
func (p policyTap) Close()      { p.s.Close() }
func (p policyTap) Bodies() [][]byte {
	var out [][]byte
	for _, r := range p.s.Requests() {
		if r.Path == "/v1/chat/completions" {
			out = append(out, r.Raw)
		}
	}
	return out
}

// proxyTap records the bodies and passes them on to a real endpoint.
type proxyTap struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// NewProxyTap forwards every request to upstream (the user's
// LLM_BASE_URL, whose path prefix is kept) and records chat bodies.
func NewProxyTap(upstream string) (ModelTap, error) {
	u, err := url.Parse(strings.TrimRight(upstream, "/"))
	if err != nil {
		return nil, err
	}
	p := &proxyTap{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = u.Host
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, `{"error":{"message":"eval proxy: reading the body"}}`, http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			p.mu.Lock()
			p.bodies = append(p.bodies, b)
			p.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

func (p *proxyTap) URL() string { return p.srv.URL }
func (p *proxyTap) Close()      { p.srv.Close() }
func (p *proxyTap) Bodies() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.bodies...)
}

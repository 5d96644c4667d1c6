package llmtest

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
)

// providers holds answers real OpenAI-compatible servers send, one file
// each: the status, headers and body of OpenAI, Azure OpenAI, vLLM, Ollama,
// llama.cpp's server and LM Studio for reasoning models, structured-output
// refusals, rate limits and error bodies. Each file's "source" says which
// server and situation it reproduces.
//
//go:embed providers/*.json
var providers embed.FS

type providerFile struct {
	Source  string            `json:"source"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// Provider answers as the named file of providers/ (without ".json"), e.g.
// Provider("azure_429_token_rate"). An unknown name answers 500 naming the
// files there are.
func Provider(name string) Reply {
	raw, err := providers.ReadFile(path.Join("providers", name+".json"))
	var f providerFile
	if err == nil {
		err = json.Unmarshal(raw, &f)
	}
	if err != nil || f.Status == 0 {
		return Status(http.StatusInternalServerError, string(errorBody("llmtest",
			fmt.Sprintf("llmtest: provider answer %q: %v (have: %s)", name, err, strings.Join(ProviderNames(), ", ")))), "application/json")
	}
	return Reply{usage: defaultUsage, serve: func(x *exchange) {
		for k, v := range f.Headers {
			x.w.Header().Set(k, v)
		}
		x.w.WriteHeader(f.Status)
		_, _ = x.w.Write(f.Body)
	}}
}

// ProviderNames lists the provider answers there are, sorted.
func ProviderNames() []string {
	entries, _ := providers.ReadDir("providers")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// WithHeader makes r answer with the header key set to value (e.g. a
// shorter Retry-After than a provider file's, so a test does not wait).
func WithHeader(r Reply, key, value string) Reply {
	inner := r.serve
	r.serve = func(x *exchange) {
		y := *x
		y.w = &headerWriter{ResponseWriter: x.w, key: key, value: value}
		inner(&y)
	}
	return r
}

// headerWriter sets one header last, just before the status is written.
type headerWriter struct {
	http.ResponseWriter
	key, value string
	wrote      bool
}

func (h *headerWriter) WriteHeader(code int) {
	if !h.wrote {
		h.wrote = true
		h.Header().Set(h.key, h.value)
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerWriter) Write(b []byte) (int, error) {
	if !h.wrote {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

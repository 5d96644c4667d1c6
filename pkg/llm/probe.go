package llm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ProbeResult is what one endpoint answered to GET {base}/models.
type ProbeResult struct {
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	OK       bool   `json:"ok"`
	// Error says why the endpoint is unusable (a 404 names LLM_BASE_URL and
	// /v1, a 401 the API key, a refused connection the address).
	Error string `json:"error,omitempty"`
	// Listed is false when the endpoint answered but its model list does
	// not name the configured model (an alias or an Azure deployment name
	// may still work, so this is a note, not a failure).
	Listed bool `json:"listed"`
}

// Probe asks every endpoint for its model list (GET {base}/models, which
// OpenAI, Azure's v1 API, Ollama, vLLM and LiteLLM serve), each within
// timeout (0: 5s). It costs no tokens, so readiness can call it.
func (c *Client) Probe(ctx context.Context, timeout time.Duration) []ProbeResult {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	out := make([]ProbeResult, 0, len(c.eps))
	for _, r := range c.eps {
		res := ProbeResult{Endpoint: r.Name, Model: r.Model}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		list, err := r.api.ListModels(pctx)
		cancel()
		var e *Error
		switch {
		case err == nil:
			res.OK = true
			for _, m := range list.Models {
				if m.ID == r.Model {
					res.Listed = true
				}
			}
		case errors.As(err, &e):
			res.Error = e.Msg
		case errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			res.Error = fmt.Sprintf("no answer from %s within %s", r.label, timeout)
		default:
			res.Error = redactKey(fmt.Sprintf("cannot reach %s: %v", r.label, err), r.APIKey)
		}
		out = append(out, res)
	}
	return out
}

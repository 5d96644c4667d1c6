// Package dispatch talks to the agents (POST /run, GET /info, GET /a2a/log)
// and runs alert investigations asynchronously, recording each outcome.
package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// ErrUnknownAgent is returned for a slug the core does not know.
var ErrUnknownAgent = errors.New("unknown agent")

// ErrNotSupported is returned when an agent answers 404 on an endpoint.
var ErrNotSupported = errors.New("not supported by this agent (404)")

// StatusError is a non-2xx answer of an agent.
type StatusError struct {
	Code int
	Msg  string
	// RetryAfter is the answer's Retry-After (a 429: the agent is at
	// capacity, api.BusyError).
	RetryAfter time.Duration
}

// Busy reports whether the agent answered that it is at capacity.
func (e *StatusError) Busy() bool { return e.Code == http.StatusTooManyRequests }

func (e *StatusError) Error() string { return fmt.Sprintf("agent answered %d: %s", e.Code, e.Msg) }

// maxAnswerBytes caps what the core reads from an agent.
const maxAnswerBytes = 8 << 20

// Client calls the agents.
type Client struct {
	peers map[string]string // slug → base URL
	token string
	http  *http.Client
}

// NewClient returns a client for peers (slug → base URL). token, when set,
// is sent as Authorization: Bearer. hc nil: a client with its own transport
// (no global timeout; every call passes a context deadline).
func NewClient(peers map[string]string, token string, hc *http.Client) *Client {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 16
		hc = &http.Client{Transport: tr}
	}
	p := make(map[string]string, len(peers))
	for k, v := range peers {
		p[k] = strings.TrimRight(v, "/")
	}
	return &Client{peers: p, token: token, http: hc}
}

// URL returns an agent's base URL.
func (c *Client) URL(slug string) (string, bool) {
	u, ok := c.peers[slug]
	return u, ok
}

// Run posts req to the agent's /run. With async the agent answers 202 at
// once. A non-2xx answer is a *StatusError.
//
// A synchronous call carries the caller's time budget: what ctx has left
// less the margin the answer needs (api.BudgetOf), so the agent ends its run
// with its best report before the core stops waiting (docs/ARCHITECTURE.md,
// "The time budget").
func (c *Client) Run(ctx context.Context, slug string, req api.RunRequest, async bool) (api.RunResult, error) {
	if b, ok := api.BudgetOf(ctx, time.Now(), 0); ok && !async && req.BudgetMS == 0 {
		if b < api.MinBudget {
			return api.RunResult{}, fmt.Errorf("agent %s: %s left of the call, below the shortest budget a run accepts (%s)", slug, b, api.MinBudget)
		}
		req.BudgetMS = api.Millis(b)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return api.RunResult{}, fmt.Errorf("encode run request: %w", err)
	}
	path := "/run"
	if async {
		path += "?async=1"
	}
	raw, err := c.do(ctx, http.MethodPost, slug, path, body)
	if err != nil {
		return api.RunResult{}, err
	}
	var res api.RunResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return api.RunResult{}, fmt.Errorf("agent %s: malformed run result: %w", slug, err)
	}
	return res, nil
}

// Info fetches the agent's GET /info.
func (c *Client) Info(ctx context.Context, slug string) (json.RawMessage, error) {
	raw, err := c.do(ctx, http.MethodGet, slug, "/info", nil)
	if err != nil {
		return nil, err
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("agent %s: /info is not JSON", slug)
	}
	return raw, nil
}

// A2ALog fetches the agent's GET /a2a/log (newest first). It accepts a JSON
// array or an object holding the array under "entries" or "items".
func (c *Client) A2ALog(ctx context.Context, slug string, limit int) ([]json.RawMessage, error) {
	raw, err := c.do(ctx, http.MethodGet, slug, fmt.Sprintf("/a2a/log?limit=%d", limit), nil)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return nil, ErrNotSupported
		}
		return nil, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("agent %s: /a2a/log is not JSON: %w", slug, err)
	}
	for _, k := range []string{"entries", "items"} {
		if v, ok := obj[k]; ok {
			if err := json.Unmarshal(v, &list); err != nil {
				return nil, fmt.Errorf("agent %s: /a2a/log %q is not a list: %w", slug, k, err)
			}
			return list, nil
		}
	}
	return nil, fmt.Errorf("agent %s: /a2a/log holds no entries list", slug)
}

// FindingLives reads the agent's GET /findings/lifecycle with query (the
// findings' lives its sweeps observed); ErrNotSupported when it has none.
func (c *Client) FindingLives(ctx context.Context, slug string, query url.Values) ([]api.FindingStateView, error) {
	raw, err := c.do(ctx, http.MethodGet, slug, "/findings/lifecycle?"+query.Encode(), nil)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return nil, ErrNotSupported
		}
		return nil, err
	}
	var page struct {
		Items []api.FindingStateView `json:"items"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("agent %s: /findings/lifecycle is not a list: %w", slug, err)
	}
	return page.Items, nil
}

// Health calls the agent's GET /health.
// GetRun reads one run with its trace from an agent (GET /runs/{id}).
func (c *Client) GetRun(ctx context.Context, slug, runID string) (json.RawMessage, error) {
	if runID == "" || strings.ContainsAny(runID, "/?#") {
		return nil, fmt.Errorf("invalid run id %q", runID)
	}
	return c.do(ctx, http.MethodGet, slug, "/runs/"+url.PathEscape(runID), nil)
}

func (c *Client) Health(ctx context.Context, slug string) error {
	_, err := c.do(ctx, http.MethodGet, slug, "/health", nil)
	return err
}

func (c *Client) do(ctx context.Context, method, slug, path string, body []byte) ([]byte, error) {
	base, ok := c.peers[slug]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, slug)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", slug, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("agent %s %s %s: %w (after %s)", slug, method, path, cause, time.Since(start).Round(time.Millisecond))
		}
		return nil, fmt.Errorf("agent %s %s %s: %w", slug, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("agent %s %s %s: read answer: %w", slug, method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Code: resp.StatusCode, Msg: errorText(raw), RetryAfter: api.ParseRetryAfter(resp.Header.Get("Retry-After"))}
	}
	return raw, nil
}

// errorText extracts {"error": "..."} or a short prefix of the body.
func errorText(raw []byte) string {
	var eb api.ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
		return eb.Error
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// SetActions sends the kill switch to the agent (PUT /actions) and returns
// the agent's state as it answered.
func (c *Client) SetActions(ctx context.Context, slug string, s api.ActionsSwitch) (api.ActionsSwitch, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return api.ActionsSwitch{}, err
	}
	return c.actions(ctx, http.MethodPut, slug, body)
}

func (c *Client) actions(ctx context.Context, method, slug string, body []byte) (api.ActionsSwitch, error) {
	raw, err := c.do(ctx, method, slug, "/actions", body)
	if err != nil {
		return api.ActionsSwitch{}, err
	}
	var out api.ActionsSwitch
	if err := json.Unmarshal(raw, &out); err != nil || out.Paused == nil {
		return api.ActionsSwitch{}, fmt.Errorf("agent %s: %s /actions answered no kill switch state", slug, method)
	}
	return out, nil
}

// GetActions reads the agent's kill switch (GET /actions).
func (c *Client) GetActions(ctx context.Context, slug string) (api.ActionsSwitch, error) {
	return c.actions(ctx, http.MethodGet, slug, nil)
}

// Proposals reads what the agent's action envelope left for a human
// (GET /actions/proposals): proposals and recommendations, newest first.
func (c *Client) Proposals(ctx context.Context, slug string, limit int) ([]api.ActionView, error) {
	raw, err := c.do(ctx, http.MethodGet, slug, fmt.Sprintf("/actions/proposals?limit=%d", limit), nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Items []api.ActionView `json:"items"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("agent %s: /actions/proposals is not a list: %w", slug, err)
	}
	return out.Items, nil
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// RunPage is a page of an agent's GET /runs.
type RunPage struct {
	Items      []api.RunResult `json:"items"`
	NextCursor string          `json:"next_cursor"`
}

// Runs lists the agent's runs, newest first (GET /runs with query:
// workflow_type, status, limit, cursor).
func (c *Client) Runs(ctx context.Context, slug string, query url.Values) (RunPage, error) {
	path := "/runs"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	raw, err := c.do(ctx, http.MethodGet, slug, path, nil)
	if err != nil {
		return RunPage{}, err
	}
	var p RunPage
	if err := json.Unmarshal(raw, &p); err != nil {
		return RunPage{}, fmt.Errorf("agent %s: /runs is not a page of runs: %w", slug, err)
	}
	return p, nil
}

// PRs reads the agent's GET /prs (its forge's agent PRs): state "open" or
// "all" (with recent merged or closed ones). ErrNotSupported when the
// agent has no such endpoint (an older agent).
func (c *Client) PRs(ctx context.Context, slug, state string, recent int) (api.PRList, error) {
	q := url.Values{"state": {state}}
	if state == "all" && recent > 0 {
		q.Set("limit", strconv.Itoa(recent))
	}
	raw, err := c.do(ctx, http.MethodGet, slug, "/prs?"+q.Encode(), nil)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return api.PRList{}, ErrNotSupported
		}
		return api.PRList{}, err
	}
	var l api.PRList
	if err := json.Unmarshal(raw, &l); err != nil {
		return api.PRList{}, fmt.Errorf("agent %s: /prs is not a list of pull requests: %w", slug, err)
	}
	return l, nil
}

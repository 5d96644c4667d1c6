package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

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

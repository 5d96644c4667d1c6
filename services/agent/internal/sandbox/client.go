package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

var httpClient = &http.Client{Timeout: 30 * time.Second}

// GetJSON GETs url and decodes a JSON answer into v (any status). It
// returns the status code.
func GetJSON(ctx context.Context, url string, v any) (int, error) {
	return doJSON(ctx, http.MethodGet, url, nil, v)
}

// PostJSON POSTs body as JSON and decodes the answer into v.
func PostJSON(ctx context.Context, url string, body, v any) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	return doJSON(ctx, http.MethodPost, url, raw, v)
}

func doJSON(ctx context.Context, method, url string, body []byte, v any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	setAuth(req)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading answer: %w", method, url, err)
	}
	if v != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: answer %d is not the expected JSON: %w (%.200s)", method, url, resp.StatusCode, err, raw)
		}
	}
	return resp.StatusCode, nil
}

// statusOf GETs url and returns the status code only.
func statusOf(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	setAuth(req)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Token is the fleet's AUTH_TOKEN (docs/MANUAL.md, "Try it"): this process's
// own AUTH_TOKEN when set, else a random one made once. Every process the
// sandbox starts gets it, and every request it sends carries it: the
// services refuse to start without one.
var Token = sync.OnceValue(func() string {
	if tok := os.Getenv("AUTH_TOKEN"); tok != "" {
		return tok
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
})

// SetAuth sends the fleet's token: every route but the probes needs it.
func SetAuth(req *http.Request) { req.Header.Set("Authorization", "Bearer "+Token()) }

func setAuth(req *http.Request) { SetAuth(req) }

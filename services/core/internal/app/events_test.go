package app_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEventStream: a webhook's decision and the investigation it starts
// and ends arrive on GET /api/v1/events as they happen, and Shutdown ends
// the stream instead of waiting for it.
func TestEventStream(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /api/v1/events = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	next := func() (kind, data string) {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v (kind %q)", err, kind)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && kind != "":
				return kind, data
			}
		}
	}
	if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp-live", "KubePodOOMKilled", "shop", "firing"))); code != 200 {
		t.Fatalf("webhook = %d %s", code, b)
	}
	want := []struct{ kind, has string }{
		{"decision", `"decision":"dispatched"`},
		{"investigation", `"status":"running"`},
		{"investigation", `"status":"completed"`},
	}
	for _, w := range want {
		kind, data := next()
		if kind != w.kind || !strings.Contains(data, w.has) || !strings.Contains(data, "KubePodOOMKilled") {
			t.Fatalf("event %s %s, want %s with %s", kind, data, w.kind, w.has)
		}
	}
	// Shutdown ends the stream; it does not wait out its timeout.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Errorf("shutdown with a stream open: %v", err)
	}
	for {
		if _, err := rd.ReadString('\n'); err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the stream outlived Shutdown: %v", err)
			}
			break
		}
	}
}

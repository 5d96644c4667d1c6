package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", DefaultRetention, ""}, {"30d", 30 * 24 * time.Hour, ""}, {" 90d ", 90 * 24 * time.Hour, ""},
		{"720h", 720 * time.Hour, ""}, {"0", 0, ""}, {"off", 0, ""},
		{"1h", 0, "must be at least 48h"}, {"1d", 0, "must be at least 48h"}, {"-2d", 0, "malformed"},
		{"thirty days", 0, "malformed"}, {"30days", 0, "malformed"},
	} {
		got, err := ParseRetention(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRetention(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestRetainLoop: the agent's retention loop prunes its runs on its own
// ticks and stops with its context.
func TestRetainLoop(t *testing.T) {
	t.Parallel()
	c := newClock()
	m := NewMemory(c.Now)
	ctx := context.Background()
	mustNil(t, m.CreateRun(ctx, Run{ID: "old", Agent: "noor", StartedAt: c.Now()}))
	c.Advance(31 * 24 * time.Hour)
	mustNil(t, m.CreateRun(ctx, Run{ID: "new", Agent: "noor", StartedAt: c.Now()}))
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Retain(lctx, m, AgentData, DefaultRetention, time.Millisecond, c.Now, zaptest.NewLogger(t))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := m.GetRun(ctx, "old"); errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loop never pruned the old run")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if _, err := m.GetRun(ctx, "new"); err != nil {
		t.Fatalf("new run: %v", err)
	}
}

package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestBudgetOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	deadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(d))
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		limit time.Duration
		want  time.Duration
		ok    bool
	}{
		{"no deadline, no limit", context.Background(), 0, 0, false},
		{"limit only", context.Background(), 540 * time.Second, 530 * time.Second, true},
		{"deadline shorter than the limit", deadline(time.Second), 540 * time.Second, 900 * time.Millisecond, true},
		{"limit shorter than the deadline", deadline(time.Hour), 20 * time.Second, 18 * time.Second, true},
		{"deadline only", deadline(10 * time.Minute), 0, 590 * time.Second, true},
		{"deadline passed", deadline(-time.Second), 0, -900 * time.Millisecond, true},
	} {
		got, ok := api.BudgetOf(tc.ctx, now, tc.limit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: BudgetOf = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if api.Millis(time.Microsecond) != 1 || api.Millis(1500*time.Millisecond) != 1500 {
		t.Error("Millis rounds a positive duration below 1ms to 0")
	}
}

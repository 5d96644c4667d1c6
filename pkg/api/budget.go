package api

import (
	"context"
	"time"
)

// The time budget travels with every call (docs/ARCHITECTURE.md, "The time
// budget"): a caller that will wait d for an answer sends the callee
// d − Margin(d) as RunRequest.BudgetMS (A2A: the kubecrew/budget_ms
// metadata key), and the callee ends its run within that budget less its
// own Margin, with its best report. The budget is relative, not a wall-clock
// deadline, so the two ends' clocks need not agree (as gRPC's grpc-timeout).

// MinBudget is the shortest budget a run accepts: less cannot produce a
// report, and a caller with less time left does not call.
const MinBudget = 100 * time.Millisecond

// maxMargin bounds Margin.
const maxMargin = 10 * time.Second

// Margin is the time kept back from a budget d for what follows the work:
// writing the report and carrying the answer back. One tenth, at most 10s.
func Margin(d time.Duration) time.Duration {
	return min(d/10, maxMargin)
}

// CallBudget is the budget a caller that will wait d sends its callee:
// d less the margin the answer needs to come back.
func CallBudget(d time.Duration) time.Duration {
	return d - Margin(d)
}

// BudgetOf is what a caller bound by ctx can give a callee it will wait at
// most limit for (limit ≤ 0: no limit of its own): the lesser of limit and
// the time ctx has left, less the margin. ok is false when ctx has no
// deadline and limit ≤ 0 (no budget to send).
func BudgetOf(ctx context.Context, now time.Time, limit time.Duration) (budget time.Duration, ok bool) {
	d, ok := limit, limit > 0
	if dl, has := ctx.Deadline(); has {
		if left := dl.Sub(now); !ok || left < d {
			d, ok = left, true
		}
	}
	if !ok {
		return 0, false
	}
	return CallBudget(d), true
}

// Millis is d in whole milliseconds (at least 1 for a positive d), the
// unit of budget_ms.
func Millis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if ms == 0 && d > 0 {
		ms = 1
	}
	return ms
}

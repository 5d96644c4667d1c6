package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// DefaultRetention is how long records are kept (RETENTION): decisions,
// investigations and idle alert states for the core; runs with their
// events, findings and the A2A log for an agent.
const DefaultRetention = 30 * 24 * time.Hour

// PruneBatch is how many records of one kind one Prune call deletes at
// most: small batches keep each transaction short, so pruning a backlog of
// a million rows never holds locks a webhook waits on.
const PruneBatch = 1000

// Scope says whose records a Prune call deletes: each process prunes what
// it owns (they may share one database with different RETENTION).
type Scope int

const (
	// AgentData: runs and their trace events, findings, the A2A log.
	AgentData Scope = iota + 1
	// CoreData: alert decisions, finished investigations (a running one
	// holds its agent's slot until upkeep reclaims it), and alert states
	// not seen since the cutoff and not in flight.
	CoreData
)

// Pruned counts what one Prune call deleted.
type Pruned struct {
	Runs, Events, Findings, A2A           int
	Decisions, Investigations, AlertState int
}

// Total is the number of records deleted.
func (p Pruned) Total() int {
	return p.Runs + p.Events + p.Findings + p.A2A + p.Decisions + p.Investigations + p.AlertState
}

// Add sums two counts.
func (p Pruned) Add(q Pruned) Pruned {
	return Pruned{p.Runs + q.Runs, p.Events + q.Events, p.Findings + q.Findings, p.A2A + q.A2A,
		p.Decisions + q.Decisions, p.Investigations + q.Investigations, p.AlertState + q.AlertState}
}

// more reports whether some kind hit the batch limit (more may be left).
func (p Pruned) more(limit int) bool {
	for _, n := range []int{p.Runs, p.Findings, p.A2A, p.Decisions, p.Investigations, p.AlertState} {
		if n >= limit {
			return true
		}
	}
	return false
}

// Pruner deletes old records, oldest first, at most limit of each kind
// per call (a run counts once, with all its events).
type Pruner interface {
	Prune(ctx context.Context, scope Scope, before time.Time, limit int) (Pruned, error)
}

// PruneOlder deletes scope's records older than before in batches of
// PruneBatch until none is left, ctx ends or maxBatches batches ran (0: no
// bound): what a maintenance loop calls each tick. A backlog (a database
// that never had retention) is worked off over several ticks.
func PruneOlder(ctx context.Context, p Pruner, scope Scope, before time.Time, maxBatches int) (Pruned, error) {
	var total Pruned
	for i := 1; ; i++ {
		n, err := p.Prune(ctx, scope, before, PruneBatch)
		total = total.Add(n)
		if err != nil {
			return total, fmt.Errorf("prune: %w", err)
		}
		if !n.more(PruneBatch) || ctx.Err() != nil || i == maxBatches {
			return total, ctx.Err()
		}
	}
}

func checkPrune(scope Scope, before time.Time, limit int) error {
	if scope != AgentData && scope != CoreData {
		return invalidf("prune scope %d: want AgentData or CoreData", scope)
	}
	if before.IsZero() {
		return invalidf("prune: no cutoff time")
	}
	if limit <= 0 {
		return invalidf("prune: limit %d must be positive", limit)
	}
	return nil
}

// ParseRetention reads a RETENTION value: "" is DefaultRetention; "0" or
// "off" keeps records forever; otherwise a Go duration ("720h") or whole
// days ("30d"), at least MinRetention.
func ParseRetention(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return DefaultRetention, nil
	case "0", "off":
		return 0, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("RETENTION: malformed %q (want e.g. 30d, 720h, or 0 to keep forever)", v)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return 0, fmt.Errorf("RETENTION: malformed %q (want e.g. 30d, 720h, or 0 to keep forever)", v)
		}
	}
	if d < MinRetention {
		return 0, fmt.Errorf("RETENTION (%s) must be at least %s, or 0 to keep forever: the standing-alert backoff reads a day of history", v, MinRetention)
	}
	return d, nil
}

// MinRetention: nothing younger than two days is deleted (an alert
// state is read by a backoff of up to 24h).
const MinRetention = 48 * time.Hour

// PruneBatchesPerTick bounds one maintenance tick's retention work
// (PruneBatch rows of each kind per batch, about 20 ms each on a million-row
// table): a backlog is worked off over several ticks.
const PruneBatchesPerTick = 100

// PruneTick is one maintenance tick of retention: scope's records older
// than retention (0: keep forever) are deleted, at most
// PruneBatchesPerTick batches, and what was deleted is logged.
func PruneTick(ctx context.Context, p Pruner, scope Scope, retention time.Duration, now time.Time, log *zap.Logger) (Pruned, error) {
	if retention <= 0 {
		return Pruned{}, nil
	}
	n, err := PruneOlder(ctx, p, scope, now.Add(-retention), PruneBatchesPerTick)
	if n.Total() > 0 && log != nil {
		log.Info("retention: deleted records older than RETENTION", zap.Duration("retention", retention),
			zap.Int("runs", n.Runs), zap.Int("events", n.Events), zap.Int("findings", n.Findings), zap.Int("a2a_entries", n.A2A),
			zap.Int("decisions", n.Decisions), zap.Int("investigations", n.Investigations), zap.Int("alert_states", n.AlertState))
	}
	return n, err
}

// Retain runs PruneTick every interval until ctx ends (an agent's loop: it
// owns its runs, findings and A2A log). It returns when ctx is done.
func Retain(ctx context.Context, p Pruner, scope Scope, retention, every time.Duration, now func() time.Time, log *zap.Logger) {
	if retention <= 0 {
		return
	}
	if log == nil {
		log = zap.NewNop()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := PruneTick(ctx, p, scope, retention, now(), log); err != nil && ctx.Err() == nil {
			log.Warn("retention", zap.Error(err))
		}
	}
}

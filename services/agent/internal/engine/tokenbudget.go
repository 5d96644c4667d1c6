package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// TokenBudget is the hard ceiling on model tokens (prompt + completion):
// Daily per agent per UTC day (AGENT_TOKEN_BUDGET), PerRun per run
// (AGENT_RUN_TOKEN_BUDGET); 0 is no ceiling. A call that would cross a
// ceiling is not made: the run ends with the playbook where its persona
// has one, and says so (docs/MANUAL.md, "Model cost").
type TokenBudget struct {
	Daily  int
	PerRun int
}

// ErrTokenBudget is the cause of a model call refused by the token budget.
var ErrTokenBudget = errors.New("model token budget spent")

// budgetError says which ceiling stopped a call and where it stood.
type budgetError struct {
	scope       string // day|run
	setting     string
	limit, used int
	next        int // the estimate of the refused call
}

func (b *budgetError) Error() string {
	return fmt.Sprintf("%s: the %s ceiling %s=%d has %d left and the next model call needs about %d",
		ErrTokenBudget, b.scope, b.setting, b.limit, max(0, b.limit-b.used), b.next)
}

func (b *budgetError) Unwrap() error { return ErrTokenBudget }

// BudgetStatus is what GET /info shows of the token budget.
type BudgetStatus struct {
	// Day is the UTC day the daily figures are for.
	Day         string `json:"day"`
	DailyLimit  int    `json:"daily_limit"` // 0: no ceiling
	UsedToday   int    `json:"used_today"`
	LeftToday   *int   `json:"left_today"` // null without a ceiling
	PerRunLimit int    `json:"per_run_limit"`
}

// ledger counts the agent's tokens of the current UTC day. It starts from
// the store's runs of the day (a restart does not reset the ceiling); runs
// of other replicas that share the store are counted at start only.
type ledger struct {
	budget TokenBudget
	now    func() time.Time

	mu   sync.Mutex
	day  string
	used int
}

func newLedger(ctx context.Context, b TokenBudget, st store.AgentStore, agent string, now func() time.Time) (*ledger, error) {
	l := &ledger{budget: b, now: now, day: dayOf(now())}
	if b.Daily <= 0 {
		return l, nil
	}
	used, err := usedSince(ctx, st, agent, dayStart(now()))
	l.used = used
	return l, err
}

func dayOf(t time.Time) string       { return t.UTC().Format(time.DateOnly) }
func dayStart(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// usedSince sums the tokens of agent's runs started since t (newest first,
// so it stops at the first older one).
func usedSince(ctx context.Context, st store.AgentStore, agent string, since time.Time) (int, error) {
	used, cursor := 0, ""
	for range 100 { // at most 100 pages: a day of a busy agent
		runs, next, err := st.ListRuns(ctx, store.RunFilter{Agent: agent}, store.Page{Limit: 200, Cursor: cursor})
		if err != nil {
			return used, fmt.Errorf("reading today's runs for AGENT_TOKEN_BUDGET: %w", err)
		}
		for _, r := range runs {
			if r.StartedAt.Before(since) {
				return used, nil
			}
			used += r.Tokens.Prompt + r.Tokens.Completion
		}
		if next == "" {
			return used, nil
		}
		cursor = next
	}
	return used, nil
}

// roll starts a new day's count; l.mu is held.
func (l *ledger) roll() {
	if d := dayOf(l.now()); d != l.day {
		l.day, l.used = d, 0
	}
}

// check refuses a call of about next tokens when it would cross a ceiling;
// runUsed is what the run has spent so far.
func (l *ledger) check(runUsed, next int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if b := l.budget.Daily; b > 0 && l.used+next > b {
		return &budgetError{scope: "day", setting: "AGENT_TOKEN_BUDGET", limit: b, used: l.used, next: next}
	}
	if b := l.budget.PerRun; b > 0 && runUsed+next > b {
		return &budgetError{scope: "run", setting: "AGENT_RUN_TOKEN_BUDGET", limit: b, used: runUsed, next: next}
	}
	return nil
}

func (l *ledger) spend(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	l.used += n
}

func (l *ledger) status() BudgetStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	s := BudgetStatus{Day: l.day, DailyLimit: l.budget.Daily, UsedToday: l.used, PerRunLimit: l.budget.PerRun}
	if l.budget.Daily > 0 {
		left := max(0, l.budget.Daily-l.used)
		s.LeftToday = &left
	}
	return s
}

// TokenBudget reports the token budget and what is left of today's.
func (e *Engine) TokenBudget() BudgetStatus { return e.ledger.status() }

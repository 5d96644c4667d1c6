package store

// Repeats are counted, not written (docs/MANUAL.md, "Repeats are counted, not
// written"): a repeat of a known alert — deduped, in cooldown or ignored
// again, changing nothing of its state but last_seen — is counted in memory
// and flushed in batches within the flush interval and at Close. Every state
// change (dispatched, queued, resolved, first ignored, joined, dropped) is
// written at once under the claim's locks, as before.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Bounds of the repeat counters and the state cache.
const (
	// repeatsFlushAt pending rows start a flush before the interval ends.
	repeatsFlushAt = 5000
	// repeatsMax pending rows at most: past it (flushes failing) a new
	// row's repeat is not counted, and said so in the log.
	repeatsMax = 100_000
	// repeatsCacheMax alert states are cached at most.
	repeatsCacheMax = 100_000
)

type repeatKey struct {
	fingerprint, decision, agent, investigationID, status, alertname string
}

// cachedState is an alert state as this process last read or wrote it.
type cachedState struct {
	st     AlertState
	loaded time.Time
}

// repeats holds the counters waiting for a flush and the states repeats are
// decided from.
type repeats struct {
	interval  time.Duration
	mu        sync.Mutex
	rows      map[repeatKey]AlertDecision // Count, FirstAt and At aggregated
	seen      map[string]time.Time        // state fingerprint → last_seen
	states    map[string]cachedState
	lost      int // repeats not counted since the last warning (repeatsMax)
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	flushMu   sync.Mutex // one flush at a time
	closeOnce sync.Once
	// listening: other replicas' writes are heard (postgres_listen.go).
	listening  atomic.Bool
	stopListen context.CancelFunc
	listenDone chan struct{}
}

func newRepeats(interval time.Duration) *repeats {
	return &repeats{
		interval: interval,
		rows:     map[repeatKey]AlertDecision{}, seen: map[string]time.Time{}, states: map[string]cachedState{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), listenDone: make(chan struct{}),
	}
}

// isRepeat reports whether decision d, taking the state from prev to st,
// changes nothing but last_seen: such a decision is counted, not written.
func isRepeat(prev AlertState, known bool, d AlertDecision, st AlertState) bool {
	switch d.Decision {
	case DecisionDeduped, DecisionCooldown, DecisionIgnored:
	default:
		return false
	}
	if !known {
		return false // the first ignored is a state change
	}
	st.LastSeen = prev.LastSeen
	return st.Fingerprint == prev.Fingerprint && st.Alertname == prev.Alertname && st.Agent == prev.Agent &&
		st.Firing == prev.Firing && st.ContentHash == prev.ContentHash && st.FirstSeen.Equal(prev.FirstSeen) &&
		st.LastInvestigated.Equal(prev.LastInvestigated) && st.Investigations == prev.Investigations &&
		st.InFlight == prev.InFlight && st.InvestigationID == prev.InvestigationID && st.Pending == prev.Pending
}

// try decides fingerprint from its cached state, if this process read or
// wrote it within the interval. It answers (hit=true) only a repeat; any
// other decision, or a miss, goes to the database under the claim's locks.
// The agent's in-flight count is not known here; a repeat does not depend
// on it.
func (r *repeats) try(fingerprint, agent string, fn DecideFunc, now func() time.Time) (AlertDecision, AlertState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.states[fingerprint]
	if !ok || c.st.Agent != agent || !r.fresh(c, now()) {
		return AlertDecision{}, AlertState{}, false
	}
	d, st, _, err := decide(fingerprint, agent, c.st, true, 0, fn, nil, now)
	if err != nil || !isRepeat(c.st, true, d, st) {
		return AlertDecision{}, AlertState{}, false
	}
	r.countLocked(d, st)
	c.st = st
	r.states[fingerprint] = c
	return d, st, true
}

// count records a repeat decided from the database.
func (r *repeats) count(d AlertDecision, st AlertState, readAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.countLocked(d, st)
	r.cacheLocked(st, readAt)
}

func (r *repeats) countLocked(d AlertDecision, st AlertState) {
	k := repeatKey{d.Fingerprint, d.Decision, d.Agent, d.InvestigationID, d.Status, d.Alertname}
	if row, ok := r.rows[k]; ok {
		row.Count++
		if d.At.After(row.At) {
			row.At, row.Reason = d.At, d.Reason
		}
		r.rows[k] = row
	} else if len(r.rows) >= repeatsMax {
		r.lost++
		return
	} else {
		d.Count, d.FirstAt = 1, d.At
		r.rows[k] = d
		if len(r.rows) == repeatsFlushAt {
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
	}
	if st.LastSeen.After(r.seen[st.Fingerprint]) {
		r.seen[st.Fingerprint] = st.LastSeen
	}
}

// cache remembers a state this process wrote, read at readAt.
func (r *repeats) cache(st AlertState, readAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cacheLocked(st, readAt)
}

// cacheLocked keeps the state read (under the claim's lock) at readAt,
// unless a later read is cached already.
func (r *repeats) cacheLocked(st AlertState, readAt time.Time) {
	cur, ok := r.states[st.Fingerprint]
	if ok && cur.loaded.After(readAt) {
		return
	}
	if !ok && len(r.states) >= repeatsCacheMax {
		r.expireLocked(readAt)
		if len(r.states) >= repeatsCacheMax {
			return
		}
	}
	r.states[st.Fingerprint] = cachedState{st: st, loaded: readAt}
}

// forget drops fingerprint's cached state (another write changed it).
func (r *repeats) forget(fingerprint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.states, fingerprint)
}

// fresh reports whether a remembered state may still decide a repeat.
func (r *repeats) fresh(c cachedState, now time.Time) bool {
	age := now.Sub(c.loaded)
	return age < r.interval || (r.listening.Load() && age < cacheMaxAge)
}

func (r *repeats) expireLocked(now time.Time) {
	for fp, c := range r.states {
		if !r.fresh(c, now) {
			delete(r.states, fp)
		}
	}
}

// take hands over the pending counters, sorted (two replicas flushing
// update alert states in one order: no deadlock).
func (r *repeats) take() ([]AlertDecision, []string, []time.Time, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]AlertDecision, 0, len(r.rows))
	for _, d := range r.rows {
		rows = append(rows, d)
	}
	fps := make([]string, 0, len(r.seen))
	for fp := range r.seen {
		fps = append(fps, fp)
	}
	slices.Sort(fps)
	seen := make([]time.Time, len(fps))
	for i, fp := range fps {
		seen[i] = r.seen[fp]
	}
	lost := r.lost
	r.rows, r.seen, r.lost = map[repeatKey]AlertDecision{}, map[string]time.Time{}, 0
	return rows, fps, seen, lost
}

// putBack returns counters a failed flush could not write, merged with
// what was counted meanwhile (bounded like every count).
func (r *repeats) putBack(rows []AlertDecision, fps []string, seen []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range rows {
		k := repeatKey{d.Fingerprint, d.Decision, d.Agent, d.InvestigationID, d.Status, d.Alertname}
		if cur, ok := r.rows[k]; ok {
			cur.Count += d.Count
			cur.FirstAt = d.FirstAt
			cur.ID = d.ID
			r.rows[k] = cur
		} else if len(r.rows) < repeatsMax {
			r.rows[k] = d
		} else {
			r.lost += d.Count
		}
	}
	for i, fp := range fps {
		if seen[i].After(r.seen[fp]) {
			r.seen[fp] = seen[i]
		}
	}
}

// flushRepeats writes the pending repeat counters: one row per alert and
// decision, and last_seen of their states, in one implicit transaction.
func (p *Postgres) flushRepeats(ctx context.Context) error {
	r := p.rep
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	rows, fps, seen, lost := r.take()
	if lost > 0 {
		p.log.Warn("repeat counters full: repeats not counted (flushes failing?)", zap.Int("lost", lost))
	}
	if len(rows) == 0 && len(fps) == 0 {
		return nil
	}
	var c decisionColumns
	for _, d := range rows {
		c.add(normDecision(d))
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit TO off`) // counters: a database crash may lose the last of them
	b.Queue(`INSERT INTO alert_decisions (`+decisionCols+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::timestamptz[], $10::int[], $11::timestamptz[])
		ON CONFLICT DO NOTHING`, c.id, c.fingerprint, c.alertname, c.status, c.decision, c.agent, c.investigationID, c.reason,
		c.at, c.count, c.firstAt)
	// Every state the counters touched is returned, read under the row
	// locks: a repeating alert's remembered state is renewed each flush.
	b.Queue(`UPDATE alert_state s SET last_seen = greatest(s.last_seen, v.ls) FROM unnest($1::text[], $2::timestamptz[]) AS v(fp, ls)
		WHERE s.fingerprint = v.fp RETURNING `+prefixed("s.", alertCols), fps, seen)
	b.Queue(`COMMIT`)
	readAt := p.now()
	br := p.pool.SendBatch(ctx, b)
	var states []AlertState
	var err error
	for range 3 {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if err == nil {
		var rs pgx.Rows
		if rs, err = br.Query(); err == nil {
			states, err = pgx.CollectRows(rs, func(row pgx.CollectableRow) (AlertState, error) { return scanAlertState(row) })
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.putBack(rows, fps, seen)
		return pgErr("flush repeats", err)
	}
	r.mu.Lock()
	for _, st := range states {
		if c, ok := r.states[st.Fingerprint]; ok && !c.loaded.After(readAt) {
			r.states[st.Fingerprint] = cachedState{st: st, loaded: readAt}
		}
	}
	r.expireLocked(readAt)
	r.mu.Unlock()
	return nil
}

// tryRead decides a repeat from the state read in one round trip, without
// a transaction or locks: a repeat writes nothing, so deciding it from a
// state a concurrent change has just replaced is deciding it a moment
// earlier. Anything else (ok=false) goes to the locked path.
func (p *Postgres) tryRead(ctx context.Context, fingerprint, agent string, fn DecideFunc) (AlertDecision, AlertState, bool, error) {
	readAt := p.now()
	prev, err := scanAlertState(p.pool.QueryRow(ctx, `SELECT `+alertCols+` FROM alert_state WHERE fingerprint=$1`, fingerprint))
	if errors.Is(err, pgx.ErrNoRows) {
		return AlertDecision{}, AlertState{}, false, nil // new: a state change
	}
	if err != nil {
		return AlertDecision{}, AlertState{}, false, pgErr("apply alert "+fingerprint, err)
	}
	if prev.Agent != agent {
		return AlertDecision{}, AlertState{}, false, nil
	}
	d, st, _, err := decide(fingerprint, agent, prev, true, 0, fn, nil, p.now)
	if err != nil || !isRepeat(prev, true, d, st) {
		return AlertDecision{}, AlertState{}, false, nil
	}
	p.rep.count(d, st, readAt)
	return d, st, true, nil
}

// flushPending writes pending repeat counters before a read that shows
// them (the decisions list, an alert's state): what was decided is listed.
func (p *Postgres) flushPending(ctx context.Context) error {
	if p.rep == nil {
		return nil
	}
	p.rep.mu.Lock()
	n := len(p.rep.rows) + len(p.rep.seen)
	p.rep.mu.Unlock()
	if n == 0 {
		return nil
	}
	return p.flushRepeats(ctx)
}

// flushLoop flushes every interval (sooner when many are pending) until
// stopped, then once more.
func (p *Postgres) flushLoop() {
	r := p.rep
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	flush := func() {
		ctx, cancel := context.WithTimeout(context.Background(), max(r.interval, 5*time.Second))
		defer cancel()
		if err := p.flushRepeats(ctx); err != nil {
			p.log.Warn("could not flush repeat counters; kept for the next flush", zap.Error(err))
		}
	}
	for {
		select {
		case <-r.stop:
			flush()
			return
		case <-t.C:
			flush()
		case <-r.kick:
			flush()
		}
	}
}

// decisionColumns are decisions as column arrays, for one INSERT … unnest.
type decisionColumns struct {
	id, fingerprint, alertname, status, decision, agent, investigationID, reason []string
	at, firstAt                                                                  []time.Time
	count                                                                        []int32
}

func (c *decisionColumns) add(d AlertDecision) {
	c.id = append(c.id, d.ID)
	c.fingerprint = append(c.fingerprint, d.Fingerprint)
	c.alertname = append(c.alertname, d.Alertname)
	c.status = append(c.status, d.Status)
	c.decision = append(c.decision, d.Decision)
	c.agent = append(c.agent, d.Agent)
	c.investigationID = append(c.investigationID, d.InvestigationID)
	c.reason = append(c.reason, d.Reason)
	c.at = append(c.at, d.At)
	c.firstAt = append(c.firstAt, d.FirstAt)
	c.count = append(c.count, int32(min(d.Count, 1<<31-1)))
}

// prefixed qualifies each of a comma-separated column list.
func prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

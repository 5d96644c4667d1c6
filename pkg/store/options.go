package store

import (
	"time"
)

// Option configures OpenPostgres and Open.
type Option func(*options)

type options struct {
	now            func() time.Time
	connectTimeout time.Duration
	opTimeout      time.Duration
	retryInterval  time.Duration
	retryTicks     <-chan time.Time
	maxConns       int32
	flushInterval  time.Duration
	peers          *peerHub // a Switch's, shared with each Postgres it opens
}

func buildOptions(opts []Option) options {
	o := options{
		now:            time.Now,
		connectTimeout: 5 * time.Second,
		opTimeout:      10 * time.Second,
		retryInterval:  15 * time.Second,
		flushInterval:  DefaultFlushInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock sets the store's clock (default time.Now): record times left
// zero and pulse-lock expiry use it.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithConnectTimeout bounds connecting to Postgres (default 5s), so a hung
// (not refused) database cannot block start-up.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.connectTimeout = d
		}
	}
}

// WithOpTimeout bounds one Postgres operation made through a Switch
// (default 10s); past it the Switch falls open to memory.
func WithOpTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.opTimeout = d
		}
	}
}

// WithRetryInterval sets how often a degraded Switch tries Postgres again
// (default 15s).
func WithRetryInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.retryInterval = d
		}
	}
}

// withRetryTicks replaces the retry ticker (tests drive reconnects with it).
func withRetryTicks(c <-chan time.Time) Option {
	return func(o *options) { o.retryTicks = c }
}

// WithMaxConns caps the Postgres pool (default: pgx's, max(4, CPUs)).
func WithMaxConns(n int32) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// DefaultFlushInterval is how long repeat counters wait at most before
// they are written (WithFlushInterval).
const DefaultFlushInterval = 2 * time.Second

// WithFlushInterval sets how long a repeat of a known alert (deduped, in
// cooldown, ignored again) is counted in memory at most before its counter
// and last_seen are written to Postgres (default 2s; docs/MANUAL.md, "Repeats are
// counted, not written"). 0 writes every decision at once.
func WithFlushInterval(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.flushInterval = d
		}
	}
}

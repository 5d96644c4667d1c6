package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Failed sign-ins are slowed per client address (docs/MANUAL.md, "Dashboard"):
// LoginFailures wrong tokens within LoginWindow, and that address's
// sign-ins are refused (429, Retry-After) until the window has passed.
const (
	LoginFailures = 5
	LoginWindow   = time.Minute
	// maxLoginClients bounds the limiter's memory: past it, the entries
	// whose window passed are dropped, then arbitrary ones.
	maxLoginClients = 4096
)

// loginLimiter counts failed sign-ins per client address.
type loginLimiter struct {
	now  func() time.Time
	mu   sync.Mutex
	seen map[string]failures
}

type failures struct {
	n     int
	since time.Time // the window's start: the first failure
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, seen: map[string]failures{}}
}

// clientAddr is the request's peer address without its port: the
// connection's, never a header a client could write.
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// wait is how long addr must wait before its next sign-in (0: now).
func (l *loginLimiter) wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.seen[addr]
	if !ok || f.n < LoginFailures {
		return 0
	}
	left := f.since.Add(LoginWindow).Sub(l.now())
	if left <= 0 {
		delete(l.seen, addr)
		return 0
	}
	return left
}

// failed records a wrong token from addr.
func (l *loginLimiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.seen[addr]
	if !ok || now.Sub(f.since) >= LoginWindow {
		if !ok && len(l.seen) >= maxLoginClients {
			l.evictLocked(now)
		}
		f = failures{since: now}
	}
	f.n++
	l.seen[addr] = f
}

// evictLocked makes room for one more address: the expired ones go, and
// if none had expired, one arbitrary entry.
func (l *loginLimiter) evictLocked(now time.Time) {
	for a, f := range l.seen {
		if now.Sub(f.since) >= LoginWindow {
			delete(l.seen, a)
		}
	}
	for a := range l.seen {
		if len(l.seen) < maxLoginClients {
			return
		}
		delete(l.seen, a)
	}
}

// size is how many addresses the limiter remembers (tests).
func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

package dashboard

import (
	"strconv"
	"testing"
	"time"
)

// TestLoginLimiterMemoryIsBounded: guesses from more addresses than it
// keeps never grow the limiter past maxLoginClients, and once their window
// has passed the expired entries make room and slow nobody.
func TestLoginLimiterMemoryIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	l := newLoginLimiter(func() time.Time { return now })
	for i := 0; i < LoginFailures; i++ {
		l.failed("192.0.2.1")
	}
	for i := 0; i < 3*maxLoginClients; i++ {
		l.failed("10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256))
		if n := l.size(); n > maxLoginClients {
			t.Fatalf("after %d addresses the limiter holds %d, more than %d", i+1, n, maxLoginClients)
		}
	}
	now = now.Add(LoginWindow)
	l.failed("198.51.100.1") // every other entry has expired: they go
	if n := l.size(); n > 2 {
		t.Fatalf("after the window %d addresses kept", n)
	}
	if l.wait("192.0.2.1") != 0 {
		t.Fatal("an address whose window passed is still slowed")
	}
}

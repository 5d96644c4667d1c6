// Package apitest holds what tests of both services' HTTP servers share:
// a slow client that holds a connection the way a hostile one does.
package apitest

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// Dribble is one slow client: it connects to addr, sends Prefix at once,
// then Drip one byte every Every, for as long as the server keeps the
// connection.
type Dribble struct {
	Prefix string
	Drip   string
	Every  time.Duration
}

// AssertCut fails the test unless the server closes the connection of d
// within the time given: it returns what the server answered before it
// closed (an HTTP error, or nothing).
func AssertCut(t testing.TB, addr string, d Dribble, within time.Duration) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, d.Prefix); err != nil {
		t.Fatalf("writing %q: %v", d.Prefix, err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		if d.Drip == "" {
			return
		}
		tick := time.NewTicker(d.Every)
		defer tick.Stop()
		for i := 0; ; i = (i + 1) % len(d.Drip) {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{d.Drip[i]}); err != nil {
				return // the server closed it
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(within))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("a client sending %q then a byte every %s is still connected after %s (read %q)", d.Prefix, d.Every, within, got)
	}
	return string(got)
}

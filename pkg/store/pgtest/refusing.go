package pgtest

import (
	"net"
	"testing"
)

// Refusing is a DATABASE_URL whose server accepts a connection and closes
// it at once (a listener of the test, so no port is guessed): a store that
// is down. The URL carries a planted password; addr is the listener's.
func Refusing(t testing.TB) (dsn, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr = ln.Addr().String()
	return "postgres://kubecrew:Pl4ntedDbPass@" + addr + "/test?sslmode=disable", addr
}

// Package pgtest gives tests a real PostgreSQL: the machine's database
// (TEST_DATABASE_URL, default the local trust-auth `test` database) with a
// fresh schema per test, dropped at cleanup, so tests run in parallel.
// Without a reachable database a test skips with a message; with CI=true it
// fails instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the database used when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL is TEST_DATABASE_URL or DefaultURL.
func BaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Need returns BaseURL once the database answers; it skips the test when it
// does not (fails it when CI=true).
func Need(t testing.TB) string {
	t.Helper()
	u := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Postgres at TEST_DATABASE_URL is required in CI: %v", err)
		}
		t.Skipf("Postgres unavailable (set TEST_DATABASE_URL; default %s): %v", DefaultURL, err)
	}
	conn.Close(ctx)
	return u
}

// Schema creates an empty schema <prefix>_<random>, dropped at cleanup, and
// returns a URL whose connections use it (search_path as a runtime
// parameter).
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	base := Need(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + "_" + hex.EncodeToString(b)
	exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	return WithSearchPath(t, base, schema)
}

// WithSearchPath returns base with search_path set to schema.
func WithSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(t testing.TB, base, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("%s: %v", sql, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

// WithApplicationName returns u with application_name set to name, so the
// backends of one client process can be told apart in pg_stat_activity.
func WithApplicationName(t testing.TB, u, name string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	q.Set("application_name", name)
	p.RawQuery = q.Encode()
	return p.String()
}

// WaitBackendsGone waits until no backend of application_name name is
// left. A client killed with SIGKILL leaves its backends running what it
// had already sent (a pipelined batch up to its COMMIT, say, held behind
// a lock): they may still commit after the client is gone, and only a
// backend that has ended has nothing left to write.
func WaitBackendsGone(t testing.TB, name string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); err != nil {
			t.Fatalf("waiting for the backends of %s to end: %v", name, err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d backend(s) of %s still there after %s", n, name, within)
		case <-tick.C:
		}
	}
}

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"
)

const defaultTestDB = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func testDatabaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultTestDB
}

// needPostgres skips the test when Postgres is unreachable, and fails it
// when CI=true.
func needPostgres(t testing.TB) string {
	t.Helper()
	u := testDatabaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Postgres at TEST_DATABASE_URL is required in CI: %v", err)
		}
		t.Skipf("Postgres unavailable (set TEST_DATABASE_URL; default %s): %v", defaultTestDB, err)
	}
	conn.Close(ctx)
	return u
}

// testSchema creates an empty schema kc_<random>, dropped at cleanup, and
// returns a URL whose connections use it (search_path as a runtime param).
func testSchema(t testing.TB) string {
	t.Helper()
	base := needPostgres(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "kc_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

func withSearchPath(t testing.TB, base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func newTestPostgres(t testing.TB, now func() time.Time, opts ...Option) *Postgres {
	t.Helper()
	u := testSchema(t)
	p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t), append([]Option{WithClock(now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	runContract(t, func(t *testing.T, now func() time.Time) fullStore { return newTestPostgres(t, now) })
}

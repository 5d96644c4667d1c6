package store

import (
	"context"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

func newTestPostgres(t testing.TB, now func() time.Time, opts ...Option) *Postgres {
	t.Helper()
	u := pgtest.Schema(t, "kc")
	p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t), append([]Option{WithClock(now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	runContract(t, func(t *testing.T, now func() time.Time) fullStore { return newTestPostgres(t, now) })
}

package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestClusterStopsAndStarts(t *testing.T) {
	t.Parallel()
	c := StartCluster(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatalf("started: %v", err)
	}
	c.Stop()
	if err := ping(); err == nil {
		t.Fatal("stopped, yet it answers")
	}
	c.Start()
	if err := ping(); err != nil {
		t.Fatalf("restarted: %v", err)
	}
}

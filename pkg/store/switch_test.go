package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap/zaptest"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestSwitchMemoryContract(t *testing.T) {
	t.Parallel()
	runContract(t, func(t *testing.T, now func() time.Time) fullStore {
		s, err := Open(context.Background(), "", zaptest.NewLogger(t), WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if s.Kind() != "memory" || s.State() != "memory" {
			t.Fatalf("Kind %q State %q", s.Kind(), s.State())
		}
		return s
	})
}

func TestSwitchPostgresContract(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	runContract(t, func(t *testing.T, now func() time.Time) fullStore {
		s, err := Open(context.Background(), pgtest.Schema(t, "kc"), zaptest.NewLogger(t), WithClock(now), withRetryTicks(make(chan time.Time)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if s.Kind() != "postgres" || s.State() != "postgres" {
			t.Fatalf("Kind %q State %q", s.Kind(), s.State())
		}
		return s
	})
}

func TestOpenRejectsBadURL(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "postgres://u:secret@host:notaport/db", zaptest.NewLogger(t))
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v, want ErrInvalid without the password", err)
	}
}

// A listener that accepts and never answers: a hung, not refused, database.
func TestOpenBoundsAHungConnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			go io.Copy(io.Discard, c) //nolint:errcheck
		}
	}()
	start := time.Now()
	s, err := Open(context.Background(), "postgres://postgres@"+ln.Addr().String()+"/test?sslmode=disable", zaptest.NewLogger(t),
		WithConnectTimeout(300*time.Millisecond), withRetryTicks(make(chan time.Time)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Open took %s against a hung server", took)
	}
	if !strings.HasPrefix(s.State(), "degraded: ") || s.Kind() != "memory" {
		t.Fatalf("State %q Kind %q", s.State(), s.Kind())
	}
	if err := s.CreateRun(context.Background(), Run{ID: "r", Agent: "noor"}); err != nil {
		t.Fatalf("a run fails while degraded: %v", err)
	}
}

// waitAttempt waits for the background loop's next attempt.
func waitAttempt(t *testing.T, s *Switch, tick chan time.Time) error {
	t.Helper()
	tick <- time.Now()
	select {
	case err := <-s.attempts:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("no reconnect attempt within 30s")
	}
	return nil
}

// direct opens the test schema without the proxy, to check what Postgres
// really holds.
func direct(t *testing.T, u string) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestSwitchFallsOpenAndComesBack(t *testing.T) {
	t.Parallel()
	u := pgtest.Schema(t, "kc")
	pu, _ := url.Parse(u)
	proxy := newProxy(t, pu.Host)
	proxy.Close()
	ctx := context.Background()
	tick := make(chan time.Time)
	s, err := Open(ctx, proxy.proxiedURL(u), zaptest.NewLogger(t),
		WithConnectTimeout(time.Second), WithOpTimeout(2*time.Second), withRetryTicks(tick))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// 1. Start while Postgres is unreachable: memory, degraded, runs work.
	if !strings.HasPrefix(s.State(), "degraded: ") || s.Kind() != "memory" {
		t.Fatalf("started with Postgres down: State %q Kind %q", s.State(), s.Kind())
	}
	record := func(id string) {
		t.Helper()
		mustNil(t, s.CreateRun(ctx, Run{ID: id, Agent: "platform-sre", Task: "sweep"}))
		mustNil(t, s.AppendEvents(ctx, Event{RunID: id, Seq: 0, Type: "run_start"}, Event{RunID: id, Seq: 1, Type: "run_finish"}))
		mustNil(t, s.RecordFindings(ctx, id, "platform-sre", time.Time{}, []api.Finding{{Key: "k-" + id, Severity: api.SeverityHigh}}))
		mustNil(t, s.WriteMemory(ctx, MemoryFile{Agent: "platform-sre", Path: "/memories/" + id + ".md", Content: "seen " + id}))
		mustNil(t, s.RecordA2A(ctx, A2AEntry{ID: "a2a-" + id, Agent: "platform-sre", Verb: "delegate", Text: "restart " + id}))
		mustNil(t, s.StampDelivery(ctx, DeliveryStamp{Agent: "platform-sre", Task: id, Target: "discord", BodyHash: "h"}))
		mustNil(t, s.SetPulseState(ctx, PulseState{Agent: "platform-sre", Task: id, LastRun: time.Now(), Outcome: "completed", RunID: id}))
		fin := time.Now()
		mustNil(t, s.UpdateRun(ctx, Run{ID: id, Status: api.StatusCompleted, Answer: "done " + id, FinishedAt: &fin}))
	}
	record("while-down")
	if err := waitAttempt(t, s, tick); err == nil || !strings.HasPrefix(s.State(), "degraded: ") {
		t.Fatalf("reconnect with the proxy closed: err %v, state %q", err, s.State())
	}

	// 2. Postgres is back: the background loop switches, nothing is lost.
	proxy.Open()
	if err := waitAttempt(t, s, tick); err != nil {
		t.Fatalf("reconnect with the proxy open: %v", err)
	}
	if s.State() != "postgres" || s.Kind() != "postgres" {
		t.Fatalf("after reconnect: State %q", s.State())
	}
	pg := direct(t, u)
	checkInPostgres(t, pg, "while-down")

	// 3. Postgres on, then the connections drop mid-way: writes still
	// succeed, the state says degraded, and an update of a run Postgres
	// holds is kept.
	record("before-drop")
	proxy.Close()
	mustNil(t, s.CreateRun(ctx, Run{ID: "during-drop", Agent: "platform-sre"}))
	if !strings.HasPrefix(s.State(), "degraded: ") {
		t.Fatalf("after the drop: State %q", s.State())
	}
	fin := time.Now()
	mustNil(t, s.UpdateRun(ctx, Run{ID: "before-drop", Status: api.StatusFailed, Answer: "updated during the outage", FinishedAt: &fin}))
	mustNil(t, s.UpdateA2A(ctx, A2AEntry{ID: "a2a-before-drop", Outcome: "completed", Answer: "restarted"}))
	r, err := s.GetRun(ctx, "during-drop")
	mustNil(t, err)
	if r.Status != api.StatusRunning {
		t.Fatalf("run recorded in the fallback: %+v", r)
	}

	proxy.Open()
	if err := waitAttempt(t, s, tick); err != nil {
		t.Fatalf("second reconnect: %v", err)
	}
	if s.State() != "postgres" {
		t.Fatalf("after the second reconnect: State %q", s.State())
	}
	r, err = pg.GetRun(ctx, "during-drop")
	mustNil(t, err)
	if r.Agent != "platform-sre" {
		t.Fatalf("run recorded during the drop, in Postgres: %+v", r)
	}
	r, err = pg.GetRun(ctx, "before-drop")
	mustNil(t, err)
	if r.Status != api.StatusFailed || r.Answer != "updated during the outage" || r.Task != "sweep" {
		t.Fatalf("update made during the outage, in Postgres: %+v", r)
	}
	a2a, _, err := pg.ListA2A(ctx, "platform-sre", Page{})
	mustNil(t, err)
	for _, e := range a2a {
		if e.ID == "a2a-before-drop" && (e.Outcome != "completed" || e.Text != "restart before-drop") {
			t.Fatalf("a2a update made during the outage: %+v", e)
		}
	}

	// 4. Live connections cut while the listener stays: the next operation
	// may fail on a dead connection, falls open, and the next attempt
	// reconnects at once.
	proxy.Drop()
	mustNil(t, s.CreateRun(ctx, Run{ID: "after-cut", Agent: "platform-sre"}))
	if s.State() != "postgres" {
		if err := waitAttempt(t, s, tick); err != nil {
			t.Fatalf("reconnect after a cut: %v", err)
		}
	}
	if s.State() != "postgres" {
		t.Fatalf("after a cut: State %q", s.State())
	}
	_, err = pg.GetRun(ctx, "after-cut")
	mustNil(t, err)
}

func checkInPostgres(t *testing.T, pg *Postgres, id string) {
	t.Helper()
	ctx := context.Background()
	r, err := pg.GetRun(ctx, id)
	mustNil(t, err)
	if r.Status != api.StatusCompleted || r.Answer != "done "+id || r.Task != "sweep" {
		t.Fatalf("run %s in Postgres: %+v", id, r)
	}
	evs, err := pg.Events(ctx, id)
	mustNil(t, err)
	if len(evs) != 2 {
		t.Fatalf("events of %s in Postgres: %+v", id, evs)
	}
	fs, _, err := pg.ListFindings(ctx, "platform-sre", Page{})
	mustNil(t, err)
	found := false
	for _, f := range fs {
		found = found || f.RunID == id && f.Finding.Key == "k-"+id
	}
	if !found {
		t.Fatalf("finding of %s not in Postgres: %+v", id, fs)
	}
	f, err := pg.ReadMemory(ctx, "platform-sre", "/memories/"+id+".md")
	mustNil(t, err)
	if f.Content != "seen "+id {
		t.Fatalf("memory file: %+v", f)
	}
	_, err = pg.LastDelivery(ctx, "platform-sre", id, "discord")
	mustNil(t, err)
	ps, err := pg.PulseStates(ctx, "platform-sre")
	mustNil(t, err)
	found = false
	for _, p := range ps {
		found = found || p.Task == id && p.RunID == id
	}
	if !found {
		t.Fatalf("pulse state of %s not in Postgres: %+v", id, ps)
	}
	a2a, _, err := pg.ListA2A(ctx, "platform-sre", Page{})
	mustNil(t, err)
	found = false
	for _, e := range a2a {
		found = found || e.ID == "a2a-"+id
	}
	if !found {
		t.Fatalf("a2a entry of %s not in Postgres", id)
	}
}

func TestConnFailure(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"nil", live, nil, false},
		{"not found", live, fmt.Errorf("run x: %w", ErrNotFound), false},
		{"conflict", live, fmt.Errorf("run x: %w", ErrConflict), false},
		{"invalid", live, invalidf("bad"), false},
		{"unique violation", live, &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", live, &pgconn.PgError{Code: "42601"}, false},
		{"admin shutdown", live, &pgconn.PgError{Code: "57P01"}, true},
		{"connection failure", live, &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", live, &pgconn.PgError{Code: "53300"}, true},
		{"op timeout", live, fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"caller gave up", done, fmt.Errorf("x: %w", context.Canceled), false},
		{"eof", live, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"refused", live, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"conn closed", live, fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"closed pool", live, errors.New("closed pool"), true},
		{"a bug", live, errors.New("cannot encode"), false},
	}
	for _, tc := range tests {
		if got := connFailure(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: connFailure = %v, want %v", tc.name, got, tc.want)
		}
	}
}

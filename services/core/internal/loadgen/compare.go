package loadgen

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CompareOptions configure the side-by-side benchmark.
type CompareOptions struct {
	CoreBin         string
	AlertmanagerBin string
	// DatabaseURL is the Postgres the core's Postgres target uses (a
	// schema of its own is created and dropped); "" skips that target.
	DatabaseURL string
	Alerts      int   // distinct alerts
	Posts       int   // POSTs per target per round
	Rounds      int   // interleaved rounds
	Concurrency int   // posters
	PerPost     []int // alerts per POST, one table block each
	Out         io.Writer
}

// target is one server under load.
type target struct {
	name string
	kind string
	proc *Proc
	// pgPids lists the Postgres backends serving it (nil: none).
	pgPids func(ctx context.Context) ([]int, error)
	res    Result
	cpu    time.Duration
	pgCPU  time.Duration
}

// Compare starts Alertmanager and the core (memory, Postgres), warms each
// up with one pass over the alerts (the core investigates each once, so
// what is measured is the storm's steady state: known alerts again), then
// runs the rounds interleaved — every round each target once, the order
// rotating — and prints alerts/s, p50/p99 and server CPU per 1,000 alerts
// with the ratios to Alertmanager.
func Compare(ctx context.Context, o CompareOptions) error {
	dir, err := os.MkdirTemp("", "kubecrew-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	routes := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  max_in_flight: 100\n"), 0o600); err != nil {
		return err
	}
	// No agent answers: each warm-up investigation fails at once, and the
	// alert is in cooldown from then on.
	coreEnv := []string{"ROUTES_FILE=" + routes, "AGENT_PEERS=platform-sre=http://127.0.0.1:1", "LOG_LEVEL=info", "AUTH_DISABLED=true"}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	am, err := StartAlertmanager(sctx, o.AlertmanagerBin, dir)
	if err != nil {
		return err
	}
	defer am.Stop()
	mem, err := StartCore(sctx, "core (memory)", o.CoreBin, coreEnv)
	if err != nil {
		return err
	}
	defer mem.Stop()
	targets := []*target{{name: "alertmanager", kind: Alertmanager, proc: am}, {name: mem.Name, kind: Core, proc: mem}}
	if o.DatabaseURL != "" {
		pgT, cleanup, err := startPostgresCore(sctx, o, coreEnv)
		if err != nil {
			return err
		}
		defer cleanup()
		targets = append(targets, pgT)
	}
	for _, per := range o.PerPost {
		if err := compareAt(ctx, o, per, targets); err != nil {
			return err
		}
	}
	return nil
}

// startPostgresCore starts the core on a schema of its own, its
// connections named so their backends can be found.
func startPostgresCore(ctx context.Context, o CompareOptions, env []string) (*target, func(), error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema, app := "kc_bench_"+hex.EncodeToString(b), "kubecrew-bench-"+hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, o.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	u, err := url.Parse(o.DatabaseURL)
	if err != nil {
		conn.Close(ctx)
		return nil, nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	p, err := StartCore(ctx, "core (postgres)", o.CoreBin, append(env, "DATABASE_URL="+u.String()))
	cleanup := func() {
		if p != nil {
			p.Stop()
		}
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = conn.Exec(dctx, "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(dctx)
	}
	if err != nil {
		p = nil
		cleanup()
		return nil, nil, err
	}
	pids := func(ctx context.Context) ([]int, error) {
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int])
	}
	return &target{name: p.Name, kind: Core, proc: p, pgPids: pids}, cleanup, nil
}

func compareAt(ctx context.Context, o CompareOptions, per int, targets []*target) error {
	for _, t := range targets {
		t.res, t.cpu, t.pgCPU = Result{}, 0, 0
		warm := Options{Kind: t.kind, URL: t.proc.URL, Alerts: o.Alerts, PerPost: per, Posts: (o.Alerts + per - 1) / per, Concurrency: o.Concurrency}
		if _, err := Run(ctx, warm); err != nil {
			return fmt.Errorf("%s warm-up: %w", t.name, err)
		}
		if t.kind == Core {
			// The warm-up's investigations end (no agent answers) and
			// free their slots; a second pass reads the states they left.
			if err := waitIdle(ctx, t.proc.URL); err != nil {
				return fmt.Errorf("%s warm-up: %w", t.name, err)
			}
			if _, err := Run(ctx, warm); err != nil {
				return fmt.Errorf("%s warm-up: %w", t.name, err)
			}
		}
	}
	for r := range o.Rounds {
		for i := range targets {
			t := targets[(i+r)%len(targets)]
			if err := measure(ctx, o, per, t); err != nil {
				return err
			}
		}
	}
	printTable(o.Out, per, o.Concurrency, targets)
	return nil
}

// measure runs one round against t and adds its CPU: the server's, and
// for the core on Postgres that of the backends serving it.
func measure(ctx context.Context, o CompareOptions, per int, t *target) error {
	cpu0, err := CPU(t.proc.Pid())
	if err != nil {
		return err
	}
	pg0, err := backendsCPU(ctx, t, nil)
	if err != nil {
		return err
	}
	res, err := Run(ctx, Options{Kind: t.kind, URL: t.proc.URL, Alerts: o.Alerts, PerPost: per, Posts: o.Posts, Concurrency: o.Concurrency})
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	cpu1, err := CPU(t.proc.Pid())
	if err != nil {
		return err
	}
	pg1, err := backendsCPU(ctx, t, pg0)
	if err != nil {
		return err
	}
	t.res = t.res.Merge(res)
	t.cpu += cpu1 - cpu0
	for pid, d := range pg1 {
		t.pgCPU += d - pg0[pid]
	}
	return nil
}

// backendsCPU reads the CPU of t's Postgres backends (and of those listed
// in before, which may have gone).
func backendsCPU(ctx context.Context, t *target, before map[int]time.Duration) (map[int]time.Duration, error) {
	out := map[int]time.Duration{}
	if t.pgPids == nil {
		return out, nil
	}
	pids, err := t.pgPids(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres backends: %w", err)
	}
	for pid := range before {
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if d, err := CPU(pid); err == nil {
			out[pid] = d
		} else if b, ok := before[pid]; ok {
			out[pid] = b // gone: its CPU since is unknown
		}
	}
	return out, nil
}

func printTable(w io.Writer, per, conc int, targets []*target) {
	fmt.Fprintf(w, "\n%d alert(s) per POST, %d posters\n", per, conc)
	fmt.Fprintf(w, "%-16s %10s %8s %8s %12s %12s %9s %9s\n", "server", "alerts/s", "p50 ms", "p99 ms", "CPU s/1k", "+pg s/1k", "x AM a/s", "x AM p99")
	am := targets[0]
	for _, t := range targets {
		k := float64(t.res.Alerts) / 1000
		pg := "-"
		if t.pgPids != nil {
			pg = fmt.Sprintf("%.3f", (t.cpu+t.pgCPU).Seconds()/k)
		}
		fmt.Fprintf(w, "%-16s %10.0f %8.2f %8.2f %12.3f %12s %9.2f %9.2f\n", t.name, t.res.AlertsPerSecond(),
			ms(t.res.Percentile(0.5)), ms(t.res.Percentile(0.99)), t.cpu.Seconds()/k, pg,
			t.res.AlertsPerSecond()/am.res.AlertsPerSecond(), ms(t.res.Percentile(0.99))/ms(am.res.Percentile(0.99)))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// waitIdle polls the core's metrics until no investigation is in flight.
func waitIdle(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		if n, err := inFlight(ctx, base); err == nil && n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("investigations still in flight: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func inFlight(ctx context.Context, base string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "kubecrew_core_investigations_in_flight "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s/metrics has no kubecrew_core_investigations_in_flight", base)
}

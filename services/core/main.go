// Command core feeds Alertmanager alerts to the kubecrew agents — deduped,
// cooled down, one alert run per agent in flight, routed to the read-only
// triager first — and serves the dashboard API. Configuration is the
// environment (README.md, "The core"; core --help lists every setting).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Getenv, os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `core — turns Alertmanager webhooks into investigations by the kubecrew agents and serves the dashboard API.
Usage: core [--help | --version]. The configuration is the environment (GET /info shows the effective values).`

// shutdownGrace is how long running investigations may finish on SIGTERM.
const shutdownGrace = 20 * time.Second

// run is the whole program; it returns the exit code. ctx ends on a signal.
func run(ctx context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	if code, done := settings.Flags(args[1:], stdout, stderr, "core", usage, buildinfo.Version+" ("+buildinfo.Revision()+")", config.Specs); done {
		return code
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "core: %v\n", err)
		return 1
	}
	cfg.CheckEnviron(environ)
	log := newLogger(stderr, cfg.LogLevel)
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	if cfg.CallTimeout <= config.ModelCallCeiling {
		log.Warn("AGENT_CALL_TIMEOUT is not above the model call ceiling: the core may hang up on an agent mid-call",
			zap.Duration("agent_call_timeout", cfg.CallTimeout), zap.Duration("model_call_ceiling", config.ModelCallCeiling))
	}
	routes, err := app.LoadRoutes(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "core: %v\n", err)
		return 1
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, log.Named("store"))
	if err != nil {
		fmt.Fprintf(stderr, "core: DATABASE_URL: %v\n", err)
		return 1
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	core, err := app.New(cfg, routes, app.Deps{Store: st, Registerer: reg, Gatherer: reg, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "core: %v\n", err)
		return 1
	}
	if err := core.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "core: %v\n", err)
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down", zap.Duration("grace", shutdownGrace))
	case err := <-core.Done():
		log.Error("server stopped", zap.Error(err))
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := core.Shutdown(sctx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	return code
}

func newLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	return logging.New(w, level).Named("core")
}

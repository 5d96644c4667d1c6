package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

const usage = `core — turns Alertmanager webhooks into investigations by the kubecrew agents and serves the dashboard API.
Usage: core [--help | --version]. The configuration is the environment (GET /info shows the effective values).`

// shutdownGrace is how long running investigations may finish on SIGTERM.
const shutdownGrace = 20 * time.Second

func newLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	return logging.New(w, level).Named("core")
}

// warnConfig logs what the configuration allows but should not be.
func warnConfig(log *zap.Logger, cfg config.Config) {
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	if cfg.CallTimeout <= config.ModelCallCeiling {
		log.Warn("AGENT_CALL_TIMEOUT is not above the model call ceiling: the core may hang up on an agent mid-call",
			zap.Duration("agent_call_timeout", cfg.CallTimeout), zap.Duration("model_call_ceiling", config.ModelCallCeiling))
	}
}

// newRegistry is the core's metrics registry, with the Go and process
// collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// start builds the core on its routes, store and metrics, and starts it;
// the caller closes the store once the core has shut down.
func start(ctx context.Context, cfg config.Config, log *zap.Logger) (*app.App, func(), error) {
	routes, err := app.LoadRoutes(cfg)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, log.Named("store"), store.WithFlushInterval(cfg.FlushInterval))
	if err != nil {
		return nil, nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	reg := newRegistry()
	core, err := app.New(cfg, routes, app.Deps{Store: st, Registerer: reg, Gatherer: reg, Log: log})
	if err == nil {
		err = core.Start(ctx)
	}
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return core, st.Close, nil
}

// awaitShutdown waits for a signal (ctx) or the server to stop, then lets running
// investigations finish for shutdownGrace; it returns the exit code.
func awaitShutdown(ctx context.Context, core *app.App, log *zap.Logger) int {
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

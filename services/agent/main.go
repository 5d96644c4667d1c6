// Command agent is the one generic kubecrew agent binary; AGENT_PERSONA
// picks the persona (noor|sol|vera|dax|ada or the slug).
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stderr))
}

// run starts the agent and blocks until ctx ends; it returns the exit code.
func run(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	cfg, err := config.Load(getenv, app.LoadPersona)
	if err != nil {
		fmt.Fprintf(stderr, "agent: configuration error: %v\n", err)
		return 1
	}
	log := NewLogger(stderr, cfg.LogLevel)
	defer func() { _ = log.Sync() }()
	a, err := app.New(ctx, cfg, app.Options{Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "agent: start-up error: %v\n", err)
		return 1
	}
	l, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		fmt.Fprintf(stderr, "agent: LISTEN_ADDR %s: %v\n", cfg.ListenAddr, err)
		return 1
	}
	log.Info("agent listening", zap.String("addr", l.Addr().String()), zap.String("persona", cfg.Persona.Name),
		zap.String("slug", cfg.Persona.Slug), zap.String("model", cfg.Model), zap.String("store", a.Store.Kind()))
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(l) }()
	select {
	case err := <-errc:
		if err != nil {
			log.Error("http server failed", zap.Error(err))
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	log.Info("shutting down: letting running runs finish", zap.Int("in_flight", a.Engine.InFlight()))
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	return 0
}

// NewLogger returns a JSON zap logger writing to w at level.
func NewLogger(w io.Writer, level string) *zap.Logger {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		lvl = zapcore.InfoLevel
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core)
}

// Command core feeds Alertmanager alerts to the kubecrew agents — deduped,
// cooled down, one alert run per agent in flight, routed to the read-only
// triager first — and serves the dashboard API. Configuration is the
// environment (docs/MANUAL.md, "The core"; core --help lists every setting).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Getenv, os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

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
	warnConfig(log, cfg)
	core, closeStore, err := start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "core: %v\n", err)
		return 1
	}
	defer closeStore()
	return awaitShutdown(ctx, core, log)
}

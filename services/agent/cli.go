package main

import (
	"context"
	"io"
	"net"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/command"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/memlimit"
)

const usage = `agent — one kubecrew agent; AGENT_PERSONA picks the persona (noor, sol, vera, dax, ada or the slug).
Usage: agent [--help | --version]. The configuration is the environment: built-in default < the persona's
agent.env < the process environment (GET /info shows each value and where it came from).
Subcommands: agent scan [--namespace N] [--output text|json] [--fail-on SEVERITY] — one deterministic
sweep of the current kubeconfig's cluster (agent scan --help); agent mcp — the persona's read-only
tools over MCP on stdin/stdout (agent mcp --help).`

func version() string { return buildinfo.Version + " (" + buildinfo.Revision() + ")" }

// subcommand runs a subcommand (internal/command) or --help/--version; done
// is false when the agent should serve.
func subcommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done := command.Run(ctx, args, command.Env{Getenv: getenv, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}); done {
		return code, true
	}
	return settings.Flags(args, stdout, stderr, "agent", usage, version(), config.Specs())
}

// NewLogger returns the JSON logger writing to w at level.
func NewLogger(w io.Writer, level string) *zap.Logger { return logging.New(w, logging.Level(level)) }

// shutdownGrace is how long running runs may finish on SIGTERM.
const shutdownGrace = 30 * time.Second

// serve serves a on l until the server fails (exit code 1) or ctx ends;
// then it lets running runs finish for shutdownGrace (exit code 0).
func serve(ctx context.Context, a *app.App, l net.Listener, cfg *config.Config, log *zap.Logger) int {
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
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	return 0
}

// logMemLimit says at start which memory limit the Go runtime works to
// and where it came from (docs/MANUAL.md "Memory and cluster size").
func logMemLimit(log *zap.Logger, l memlimit.Limit, err error) {
	if err != nil {
		log.Warn("memory limit: the cgroup limit could not be read; GOMEMLIMIT not set", zap.Error(err))
		return
	}
	log.Info("memory limit", zap.Int64("gomemlimit_bytes", l.Bytes), zap.Int64("cgroup_limit_bytes", l.Cgroup), zap.String("source", l.Source))
}

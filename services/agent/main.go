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

	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/memlimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr))
}

// run starts the agent and blocks until ctx ends; it returns the exit code.
// args are the command line without the program (--help, --version, or a
// subcommand: scan, mcp).
func run(ctx context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	mem, memErr := memlimit.Apply(memlimit.CgroupRoot, getenv) // before any work: scan and mcp too
	if code, done := subcommand(ctx, args, getenv, stdout, stderr); done {
		return code
	}
	cfg, err := config.Load(getenv, app.LoadPersona)
	if err != nil {
		fmt.Fprintf(stderr, "agent: configuration error: %v\n", err)
		return 1
	}
	cfg.CheckEnviron(environ)
	log := NewLogger(stderr, cfg.LogLevel)
	defer func() { _ = log.Sync() }()
	logMemLimit(log, mem, memErr)
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
	return serve(ctx, a, l, cfg, log)
}

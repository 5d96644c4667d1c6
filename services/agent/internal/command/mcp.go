package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

const mcpUsage = `Usage: agent mcp
Serves the persona's tools (AGENT_PERSONA, AGENT_TOOLS) over MCP on stdin/stdout until stdin closes:
read-only tools only unless MCP_SERVE_MUTATING=true. The configuration is the environment, as for
serving (agent --help); logs go to stderr. An MCP host starts it as a command.`

// MCP serves the persona's tools over MCP on stdin/stdout: the agent is
// built as for serving (the same tools, gates, redaction and budget) but
// listens on no port and runs no pulse timer, so it starts no run of its
// own and never calls a model.
func MCP(ctx context.Context, args []string, env Env) int {
	if len(args) > 0 {
		fmt.Fprintln(env.Stderr, mcpUsage)
		if args[0] == "--help" || args[0] == "-h" {
			return 0
		}
		return ExitError
	}
	// stdin/stdout opens no port: no token is needed to serve them
	// (docs/MANUAL.md, "Authentication" is about the HTTP routes).
	getenv := func(k string) string {
		if k == "AUTH_DISABLED" && env.Getenv("AUTH_TOKEN") == "" && env.Getenv("AUTH_READ_TOKEN") == "" {
			return "true"
		}
		return env.Getenv(k)
	}
	cfg, err := config.Load(getenv, app.LoadPersona)
	if err != nil {
		fmt.Fprintf(env.Stderr, "agent mcp: configuration error: %v\n", err)
		return 1
	}
	cfg.Warnings = slices.DeleteFunc(cfg.Warnings, func(w string) bool { return w == config.AuthDisabledWarning })
	cfg.PulseEnabled = false
	log := logging.New(env.Stderr, logging.Level(cfg.LogLevel))
	defer func() { _ = log.Sync() }()
	a, err := app.New(ctx, cfg, app.Options{Log: log})
	if err != nil {
		fmt.Fprintf(env.Stderr, "agent mcp: start-up error: %v\n", err)
		return 1
	}
	log.Info("serving MCP on stdio", zap.String("persona", cfg.Persona.Name), zap.Strings("tools", a.MCPServed()))
	t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	err = a.MCP.Run(ctx, t)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := a.Shutdown(sctx); serr != nil {
		log.Warn("shutdown", zap.Error(serr))
	}
	// stdin closing or a signal is the end of the session, not a failure.
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Error("mcp session failed", zap.Error(err))
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

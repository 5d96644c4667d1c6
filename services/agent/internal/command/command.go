// Package command holds the agent binary's subcommands beside serving
// (docs/ARCHITECTURE.md): `agent scan`, the one-shot deterministic
// diagnosis for a terminal or a CI job, and `agent mcp`, the persona's
// tools served over MCP on stdio.
package command

import (
	"context"
	"io"
)

// Env is what a subcommand gets from the process.
type Env struct {
	Getenv         func(string) string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Run runs the subcommand named by args[0]; handled is false when args
// names none (serving, --help and --version are main's).
func Run(ctx context.Context, args []string, env Env) (code int, handled bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "scan":
		return Scan(ctx, args[1:], env.Stdout, env.Stderr), true
	case "mcp":
		return MCP(ctx, args[1:], env), true
	}
	return 0, false
}

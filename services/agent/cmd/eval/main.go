// Command eval is `make eval`: it runs the scenario suite (eval/scenarios,
// one YAML file per scenario) on the sandbox cluster of `make run` with
// the real core and five agents, grades each run by machine, and writes a
// Markdown table and a JSON file. See docs/MANUAL.md section "Evaluating the
// fleet"; the work is services/agent/internal/eval.
//
//	eval [-mode M[,M…]] [-scenarios DIR] [-filter RE] [-repeat N] [-timeout D] [-bin DIR] [-out DIR]
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubecrew/kubecrew/services/agent/internal/eval"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := eval.Main(ctx, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

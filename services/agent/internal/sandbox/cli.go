package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// Main is the command line of `make run` (services/agent/cmd/sandbox): it
// parses args and the environment, runs, and returns the exit code: 0, 1
// when the run failed, 2 for bad arguments, 130 when interrupted. ctx
// ending stops the fleet (Ctrl-C); force ending skips the graceful part of
// the stop.
func Main(ctx, force context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := Options{Environ: environ}
	fs.BoolVar(&o.Headless, "headless", false, "run the incident, stop everything, exit 0 only if the PR was merged")
	fs.StringVar(&o.BinDir, "bin", "bin", "directory holding the agent and core binaries (make build)")
	fs.StringVar(&o.RunDir, "dir", "", "run directory for logs and the GitOps repository (default: a new /tmp/kubecrew-run.*)")
	fs.IntVar(&o.CorePort, "core-port", 8080, "core port on 127.0.0.1 (0 = any free port)")
	fs.IntVar(&o.AgentPort, "agent-port", 8001, "first agent port; noor, sol, vera, dax, ada take it and the next four (0 = free ports)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long the incident may take from alert to merge")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sandbox: unexpected arguments %q\n", fs.Args())
		return 2
	}
	o.Kubeconfig = strings.TrimSpace(getenv("KUBECONFIG"))
	o.AllowActions = getenv("KUBECREW_ALLOW_ACTIONS") == "1"
	o.LLMBaseURL = strings.TrimSpace(getenv("LLM_BASE_URL"))
	tier, err := ParseTier(getenv(TierEnv))
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: %v\n", err)
		return 2
	}
	o.Tier = tier
	root, err := kubetest.RepoRoot()
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: %v\n", err)
		return 2
	}
	o.Root = root
	if err := Run(ctx, force, o, stdout); err != nil {
		fmt.Fprintf(stderr, "[kubecrew] %v\n", err)
		if errors.Is(err, ErrInterrupted) {
			return 130
		}
		return 1
	}
	return 0
}

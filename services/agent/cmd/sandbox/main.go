// Command sandbox is `make run`: it shows kubecrew's whole loop on this
// machine. With no KUBECONFIG it starts a throwaway Kubernetes API server
// (hack/testenv.sh: real etcd + kube-apiserver on loopback), loads six
// broken workloads and a healthy one, creates a local GitOps repository
// holding their manifests, starts the core (:8080) and the five agents
// (:8001–:8005) as child processes, and drives one real incident: an
// Alertmanager OOMKill alert → the core's decision → Noor's triage →
// delegation to Sol over A2A → Sol's one-line pull request → Vera's review
// → merge, printed as a timeline. Then the fleet stays up for curl until
// Ctrl-C, which stops everything it started.
//
// With KUBECONFIG set the fleet runs against that cluster instead,
// read-only: no fixtures, no incident, Sol without k8s_rollout and without
// a GitOps repository. KUBECREW_ALLOW_ACTIONS=1 opts in to the demo there.
//
//	sandbox [-headless] [-bin DIR] [-dir DIR] [-core-port N] [-agent-port N] [-timeout D]
//
// -headless runs the incident, stops everything and exits 0 only if the
// pull request was merged (`make e2e`). The work is done by
// services/agent/internal/sandbox; this is its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/sandbox"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	force, forceCancel := context.WithCancel(context.Background())
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigc
		fmt.Fprintln(os.Stderr, "\n[kubecrew] stopping (Ctrl-C again to kill at once)")
		cancel()
		<-sigc
		forceCancel()
	}()
	os.Exit(Main(ctx, force, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr))
}

// Main parses args and runs; it returns the exit code. ctx ending stops
// the fleet (Ctrl-C); force ending skips the graceful part of the stop.
func Main(ctx, force context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := sandbox.Options{Environ: environ}
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
	tier, err := sandbox.ParseTier(getenv(sandbox.TierEnv))
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
	if err := sandbox.Run(ctx, force, o, stdout); err != nil {
		fmt.Fprintf(stderr, "[kubecrew] %v\n", err)
		if errors.Is(err, sandbox.ErrInterrupted) {
			return 130
		}
		return 1
	}
	return 0
}

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
// pull request was merged (`make e2e`). The flags and the work are
// services/agent/internal/sandbox's (Main); this is the signals.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	os.Exit(sandbox.Main(ctx, force, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr))
}

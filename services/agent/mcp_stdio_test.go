package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// asMain: the test binary re-executed with this variable set is the agent
// binary (main's run with the real stdin, stdout and environment), so the
// stdio test drives the program a host would start, not a copy of it.
const asMain = "KUBECREW_TEST_RUN_AGENT_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr))
	}
	os.Exit(kubetest.Main(m))
}

// `agent mcp` over stdio, driven by the official SDK's CommandTransport:
// Noor's read-only tools are listed, and cluster_problems answers on the
// real API server with the broken-workload fixtures.
func TestMCPStdio(t *testing.T) {
	env := kubetest.Start(t)
	ns := fmt.Sprintf("kc-mcpstdio-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asMain+"=1", "AGENT_PERSONA=noor", "KUBECONFIG="+env.Kubeconfig, "LOG_LEVEL=warn")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kubecrew-test-host", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	defer func() { _ = cs.Close() }()
	if init := cs.InitializeResult(); init.ServerInfo.Name != "kubecrew-platform-sre" {
		t.Errorf("server %+v", init.ServerInfo)
	}
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s is served but not read-only", tl.Name)
		}
	}
	want := "cluster_problems k8s_get_resources k8s_describe k8s_get_events k8s_get_pod_logs k8s_get_yaml k8s_api_resources k8s_nodes"
	if got := strings.Join(names, " "); !sameSet(got, want) {
		t.Errorf("served %s, want %s", got, want)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cluster_problems", Arguments: map[string]any{"namespace": ns}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, w := range []string{"OOMKilled", "CrashLoopBackOff", "ImagePullBackOff", ns} {
		if !strings.Contains(text, w) {
			t.Errorf("cluster_problems lacks %q:\n%s", w, text)
		}
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "k8s_describe", Arguments: map[string]any{"kind": "deployments", "namespace": ns, "name": "nope", "extra": 1}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "ERROR: invalid arguments") {
		t.Errorf("bad arguments: %+v %v", res, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("agent mcp did not exit 0 when stdin closed: %v\nstderr: %s", cmd.ProcessState, stderr.String())
	}
}

func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	m := map[string]bool{}
	for _, s := range x {
		m[s] = true
	}
	for _, s := range y {
		if !m[s] {
			return false
		}
	}
	return true
}

package kube

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestConnectUnreachable: a kubeconfig pointing at a port nobody listens on
// gives a client whose tools and Ready say cluster_unavailable.
func TestConnectUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // now nothing listens there
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://` + addr + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(kc, "", zap.NewNop())
	if err != nil {
		t.Fatalf("Connect must not dial: %v", err)
	}
	if err := c.Ready(context.Background()); !errors.Is(err, ErrClusterUnavailable) {
		t.Errorf("Ready = %v, want cluster_unavailable", err)
	}
	for _, tool := range []struct {
		name string
		args map[string]any
	}{
		{ToolClusterProblems, map[string]any{}},
		{ToolGetResources, map[string]any{"kind": "pods"}},
		{ToolNodes, map[string]any{}},
		{ToolAPIResources, map[string]any{}},
	} {
		out, _ := call(context.Background(), c, tool.name, tool.args)
		if !strings.HasPrefix(out, "ERROR: cluster_unavailable: ") {
			t.Errorf("%s = %q", tool.name, out)
		}
	}
}

func TestConnectBadConfigStillGivesTools(t *testing.T) {
	t.Parallel()
	c, err := Connect(filepath.Join(t.TempDir(), "missing"), "", nil)
	if err == nil || !errors.Is(err, ErrClusterUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if c == nil || len(Tools(c)) != 9 {
		t.Fatal("Connect must return a usable client even when the config fails")
	}
	if err := c.Ready(context.Background()); !errors.Is(err, ErrClusterUnavailable) {
		t.Errorf("Ready = %v", err)
	}
	out, _ := call(interactive(), c, ToolRollout, map[string]any{"action": "restart", "kind": "deployments", "namespace": "a", "name": "b"})
	if !strings.HasPrefix(out, "ERROR: cluster_unavailable: ") {
		t.Errorf("rollout = %q", out)
	}
	if _, err := Connect("", "no-such-context", nil); err == nil {
		t.Error("an unknown context must fail")
	}
}

func TestReadyOnFake(t *testing.T) {
	t.Parallel()
	c, _ := fakeClient(t)
	if err := c.Ready(context.Background()); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

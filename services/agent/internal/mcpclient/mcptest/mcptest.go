// Package mcptest finds the real MCP servers tests talk to:
// kubernetes-mcp-server and the reference server-everything, installed
// from npm by hack/mcp/install.sh (hack/test.sh exports where). When the
// variables are not set it runs the install script itself; when that
// fails the test skips, or fails with CI=true.
package mcptest

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Environment variables hack/mcp/install.sh prints and hack/test.sh exports.
const (
	EnvKubernetesMCP = "KUBECREW_TEST_K8S_MCP"
	EnvEverything    = "KUBECREW_TEST_MCP_EVERYTHING"
)

var (
	once     sync.Once
	found    map[string]string
	foundErr string
)

func lookup(tb testing.TB, name string) string {
	tb.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			foundErr = err.Error()
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "mcp", "install.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			foundErr = "hack/mcp/install.sh: " + err.Error() + ": " + strings.TrimSpace(stderr.String())
			return
		}
		found = map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				found[k] = v
			}
		}
	})
	if v := found[name]; v != "" {
		return v
	}
	msg := "MCP test server not available (" + name + "): " + foundErr
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// KubernetesMCP returns the kubernetes-mcp-server binary.
func KubernetesMCP(tb testing.TB) string { return lookup(tb, EnvKubernetesMCP) }

// Everything returns the command that runs server-everything on stdio.
func Everything(tb testing.TB) []string {
	tb.Helper()
	entry := lookup(tb, EnvEverything)
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("node is not installed: server-everything needs it")
		}
		tb.Skip("node is not installed: server-everything needs it")
	}
	return []string{node, entry, "stdio"}
}

// repoRoot walks up from the working directory to the directory holding
// go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}

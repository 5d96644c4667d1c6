package app

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/readiness"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpclient"
)

// mcpServers connects the servers AGENT_MCP_SERVERS names and adds their
// tools to reg, after every tool of the agent's own (a remote tool never
// shadows one). A malformed setting fails the start; a server that does
// not answer does not (mcpReady and /info report it).
func (a *App) mcpServers(ctx context.Context, reg *tools.Registry) error {
	cfg := a.Config
	specs, err := mcpclient.ParseServers(cfg.MCPServers)
	if err != nil {
		return cfg.Fail("AGENT_MCP_SERVERS", err.Error())
	}
	if err := mcpclient.ParseAllow(cfg.MCPReadTools); err != nil {
		return cfg.Fail("AGENT_MCP_READ_TOOLS", err.Error())
	}
	if len(specs) == 0 {
		return nil
	}
	a.mcpClient = mcpclient.Connect(ctx, mcpclient.Options{
		Servers: specs, ReadTools: cfg.MCPReadTools, Env: childEnv(os.Environ()),
		Taken: func(n string) bool { _, ok := reg.Get(n); return ok }, Version: Version, Log: a.Log.Named("mcp"),
	})
	a.closers = append(a.closers, a.mcpClient.Close)
	for _, t := range a.mcpClient.Tools() {
		reg.Add(t)
		a.mcpExternal = append(a.mcpExternal, t.Name())
	}
	return nil
}

// childEnv is the agent's environment without its secrets.
func childEnv(environ []string) []string {
	secret := config.Secrets()
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secret, k) {
			out = append(out, kv)
		}
	}
	return out
}

// mcpReady is /ready's "mcp" line: never required (an external server
// adds tools, the agent works without it), but a server that is down is
// named with its error.
func (a *App) mcpReady() readiness.Check {
	return readiness.Check{Name: "mcp", Probe: func(context.Context) readiness.Result {
		if a.mcpClient == nil {
			return readiness.Result{State: "none configured (AGENT_MCP_SERVERS)"}
		}
		var up []string
		for _, st := range a.mcpClient.Status() {
			if st.State == "connected" {
				up = append(up, st.Name)
			}
		}
		if down := a.mcpClient.Down(); len(down) > 0 {
			return readiness.Result{Err: &downErr{down}}
		}
		return readiness.Result{State: "connected: " + strings.Join(up, ", ")}
	}}
}

type downErr struct{ down []string }

func (e *downErr) Error() string { return "down since start: " + strings.Join(e.down, "; ") }

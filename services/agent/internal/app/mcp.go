package app

import (
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpserver"
)

// mountMCP builds the MCP server over the persona's own tools (AGENT_TOOLS:
// not the built-ins, which act on a run, nor the A2A verbs, which start
// other agents' runs, nor other MCP servers' tools) and mounts POST /mcp behind the router's AUTH_TOKEN
// guard. `agent mcp` serves the same server on stdio.
func (a *App) mountMCP() {
	// AGENT_TOOLS resolved already (New fails on an unknown name), so this
	// cannot fail. post_report posts the run's findings: outside a run it has
	// none, and it writes to a chat channel.
	all, _ := a.Registry.Resolve(a.Config.Tools)
	var set tools.Set
	for _, t := range all {
		if t.Name() != report.ToolName {
			set = append(set, t)
		}
	}
	a.MCP = mcpserver.New(mcpserver.Options{
		Name: "kubecrew-" + a.Config.Persona.Slug, Version: Version, Tools: set,
		AllowMutating: a.Config.MCPServeMutating, MaxChars: a.Config.ToolOutputMaxChars,
		Metrics: mcpserver.NewMetrics(a.metricsReg), Log: a.Log.Named("mcp"),
	})
	a.mcpServed = mcpserver.Served(set, a.Config.MCPServeMutating).Names()
	// POST only: the handler is stateless, so there is no session stream to
	// GET and no session to DELETE.
	a.Server.Router().Post("/mcp", mcpserver.Handler(a.MCP).ServeHTTP)
}

// MCPServed names the tools MCP serves.
func (a *App) MCPServed() []string { return append([]string{}, a.mcpServed...) }

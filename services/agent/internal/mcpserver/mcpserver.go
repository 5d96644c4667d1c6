// Package mcpserver serves an agent's tools over the Model Context Protocol
// (docs/ARCHITECTURE.md, "MCP"): `agent mcp` on stdio and POST /mcp over
// streamable HTTP. A served call takes the path a run's call takes — the
// name gate of an autonomous run, the tool's own validation and execution
// gate, redaction and the output budget (tools.Set.Call) — and never calls
// a model.
package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Options configure the server.
type Options struct {
	// Name and Version identify the server to a host ("kubecrew-noor").
	Name, Version string
	// Tools are the persona's tools (AGENT_TOOLS); Served picks what of
	// them is served.
	Tools tools.Set
	// AllowMutating serves the mutating tools an autonomous run may call
	// (MCP_SERVE_MUTATING); off, only read-only tools are served.
	AllowMutating bool
	// MaxChars is the output budget of one call (TOOL_OUTPUT_MAX_CHARS).
	MaxChars int
	Metrics  *Metrics
	Log      *zap.Logger
}

// Served is what is served of set: what the name gate leaves an autonomous
// run (an MCP host is no person confirming a change), without the
// mutating tools unless allowMutating.
func Served(set tools.Set, allowMutating bool) tools.Set {
	kept, _ := set.ForMode(tools.ModeAutonomous)
	var out tools.Set
	for _, t := range kept {
		if t.Mutating() && !allowMutating {
			continue
		}
		out = append(out, t)
	}
	return out
}

// New builds the MCP server over o.Tools.
func New(o Options) *mcp.Server {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: "kubecrew " + o.Name + ": read the cluster (cluster_problems first) and the GitOps repository. " +
			"Outputs are redacted and bounded; a tool error comes back as an ERROR text result.",
	})
	served := Served(o.Tools, o.AllowMutating)
	for _, t := range served {
		s.AddTool(Describe(t), handler(served, t.Name(), o))
	}
	return s
}

// Describe is t as MCP lists it: its schema, and annotations that say
// whether it changes anything.
func Describe(t tools.Tool) *mcp.Tool {
	mut := t.Mutating()
	return &mcp.Tool{
		Name: t.Name(), Description: t.Description(), InputSchema: json.RawMessage(t.Parameters()),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: !mut, DestructiveHint: &mut, IdempotentHint: !mut},
	}
}

// handler calls the tool as an autonomous run with no delegated target
// would: the execution gate (tools.Check) refuses what such a run may not
// do and the scope gate (tools.CheckTarget) lets it change no workload.
func handler(served tools.Set, name string, o Options) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		ctx = tools.WithNoTarget(tools.WithMode(ctx, tools.ModeAutonomous))
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		res := served.Call(ctx, name, args, o.MaxChars)
		o.Metrics.observe(name, res.Outcome)
		o.Log.Info("mcp tool call", zap.String("tool", name), zap.String("outcome", res.Outcome),
			zap.Int("chars", len(res.Output)), zap.Duration("took", time.Since(start)))
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: res.Output}},
			IsError: res.Outcome != tools.OutcomeOK,
		}, nil
	}
}

// MaxBodyBytes bounds one POST /mcp body.
const MaxBodyBytes = 1 << 20

// Handler serves s over streamable HTTP, stateless: every POST carries its
// whole exchange, so no session outlives a request. Authentication is the
// agent router's (AUTH_TOKEN).
func Handler(s *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: MaxBodyBytes})
}

// Metrics count served calls.
type Metrics struct{ calls *prometheus.CounterVec }

// NewMetrics registers kubecrew_mcp_served_tool_calls_total on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{calls: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubecrew_mcp_served_tool_calls_total",
		Help: "Tool calls served over MCP, by tool and outcome (ok, error, denied, unknown_tool, panic).",
	}, []string{"tool", "outcome"})}
	if reg != nil {
		reg.MustRegister(m.calls)
	}
	return m
}

func (m *Metrics) observe(tool, outcome string) {
	if m != nil {
		m.calls.WithLabelValues(tool, outcome).Inc()
	}
}

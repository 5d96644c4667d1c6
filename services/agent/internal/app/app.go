// Package app wires the agent binary: configuration → store → tools →
// model → engine → HTTP. main only parses the environment and handles
// signals, so tests embed the whole agent with New and Serve.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aserver"
	"github.com/kubecrew/kubecrew/services/agent/internal/builtin"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/mcpclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
	"github.com/kubecrew/kubecrew/services/agent/internal/verify"
)

// Version is the build's version (pkg/buildinfo, set at build time).
var Version = buildinfo.Version

// LoadPersona loads a persona from dir (PERSONA_DIR) or the embedded files.
func LoadPersona(dir, name string) (*persona.Persona, error) {
	var fsys fs.FS = agents.FS
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("PERSONA_DIR %q is not a readable directory", dir)
		}
		fsys = os.DirFS(dir)
	}
	return persona.Load(fsys, name)
}

// Options are what tests (and main) may inject.
type Options struct {
	Log *zap.Logger
	Now func() time.Time
	// ExtraTools are registered beside the built-in ones (tests; aliases).
	ExtraTools []tools.Tool
	// Store overrides DATABASE_URL (tests).
	Store store.AgentStore
	// Timeouts override the HTTP server's (tests shorten them); nil is
	// api.DefaultTimeouts of RUN_TIMEOUT.
	Timeouts *api.Timeouts
}

// App is one agent process.
type App struct {
	Config *config.Config
	Log    *zap.Logger
	Store  store.AgentStore
	Engine *engine.Engine
	Server *server.Server
	Reg    *prometheus.Registry
	// metricsReg registers on Reg with the agent label.
	metricsReg prometheus.Registerer

	// Registry holds every tool the binary knows, resolved or not.
	Registry *tools.Registry

	Kube *kube.Client
	Git  *gitops.Service
	// Envelope bounds every action (docs/MANUAL.md, "The action envelope").
	Envelope *envelope.Envelope
	// Verifier checks every action after it took effect; Escalator pages
	// a human when it did not work (nil Verifier: no cluster).
	Verifier  *verify.Verifier
	Escalator *pager.Escalator
	Deliverer *report.Deliverer
	forgeOK   bool
	forge     gitops.Forge // the GitOps repository (noForge when none is configured)
	a2a       *a2aserver.Service

	// MCP serves the persona's tools (mcp.go); mcpServed names them.
	MCP       *mcp.Server
	mcpServed []string
	// mcpClient holds AGENT_MCP_SERVERS (mcp_consume.go); mcpExternal
	// names their tools, which every run is given (through the gates).
	mcpClient   *mcpclient.Client
	mcpExternal []string

	a2aTraces  *a2aclient.Traces
	a2aMetrics *a2aclient.Metrics

	closers  []func()
	httpSrv  *http.Server
	timeouts api.Timeouts

	// bg is the context of background loops (pulse timer, reconnects);
	// Shutdown cancels it first.
	bg       context.Context
	bgCancel context.CancelFunc
}

// New builds the agent. It fails when the configuration names a tool the
// registry lacks, or a dependency cannot be built.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	// The secret settings are redacted by value wherever text leaves the
	// process (docs/MANUAL.md, "Redaction"), before anything is served.
	redact.Known(cfg.SecretValues()...)
	p := cfg.Persona
	log = log.With(zap.String("agent", p.Slug))
	a := &App{Config: cfg, Log: log, Reg: prometheus.NewRegistry()}
	// A blocking POST /run (and A2A message/send, /mcp) answers within
	// RUN_TIMEOUT: that bounds every write (docs/MANUAL.md, "Authentication").
	a.timeouts = api.DefaultTimeouts(cfg.RunTimeout)
	if o.Timeouts != nil {
		a.timeouts = *o.Timeouts
	}
	a.bg, a.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	a.Reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every kubecrew metric of an agent carries agent="<slug>" (docs/MANUAL.md
	// "Metrics"), so one dashboard reads the whole fleet.
	a.metricsReg = prometheus.WrapRegistererWith(prometheus.Labels{"agent": p.Slug}, a.Reg)
	buildinfo.Register(a.metricsReg, "agent")
	a.logWarnings()

	if err := a.setupStore(ctx, o); err != nil {
		return nil, err
	}
	st := a.Store
	set, a2aOut, err := a.toolSet(ctx, o)
	if err != nil {
		return nil, err
	}

	metrics := engine.NewMetrics(a.metricsReg)
	model, llmClient, modelName, err := a.modelClient(metrics, log)
	if err != nil {
		return nil, err
	}

	loadPersona := func() (*persona.Persona, error) {
		if cfg.PersonaDir == "" {
			return p, nil
		}
		return LoadPersona(cfg.PersonaDir, p.Slug) // re-read each run: a ConfigMap edit takes effect on the next run
	}
	code := a.persona()
	eng, err := engine.New(engine.Options{
		Agent: p.Info, Persona: loadPersona, Tools: set, Model: model, ModelName: modelName,
		Playbook: code.Playbook(), Backstop: code.Backstop(), Prepare: code.Prepare(), Delegator: a2aOut,
		Store: st, Cluster: cfg.ClusterName, Now: o.Now, MaxIterations: cfg.MaxIterations, ContextTokens: cfg.ContextTokens, ReplyTokens: cfg.MaxAnswerTokens,
		MaxCallsPerTurn: cfg.MaxCallsPerTurn, MaxCallsPerRun: cfg.MaxCallsPerRun, MaxReplyChars: cfg.MaxReplyChars,
		MaxAnswerChars: cfg.MaxAnswerChars, Temperature: float32(cfg.Temperature), ToolOutputMax: cfg.ToolOutputMaxChars,
		MemoryMax: cfg.MemoryMaxChars, SynthesisTimeout: cfg.SynthesisTimeout,
		RunTimeout: cfg.RunTimeout, MaxConcurrentRuns: cfg.MaxConcurrentRuns, Metrics: metrics, Log: log.Named("engine"),
		Paused:      a.Envelope.Paused,
		TokenBudget: engine.TokenBudget{Daily: cfg.TokenBudget, PerRun: cfg.RunTokenBudget},
	})
	if err != nil {
		return nil, err
	}
	a.Engine = eng
	registerBudgetMetrics(a.metricsReg, eng)

	checks, err := a.readyChecks(set, llmClient)
	if err != nil {
		return nil, err
	}
	a.Server = server.New(server.Deps{
		Engine: eng, Store: st, Info: func() any { return a.info(set, modelName) }, Checks: checks,
		Auth: httpauth.Tokens{Full: cfg.AuthToken, Read: cfg.AuthReadToken}, Gatherer: a.Reg, Log: log.Named("http"),
		PRs: a.prReader(),
	})
	if err := a.mountA2A(eng); err != nil {
		return nil, err
	}
	a.mountMCP()
	if err := a.setupPulse(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// setupStore opens the store (unless the options bring one) and starts
// its retention loop: the agent owns its runs, traces, findings and A2A
// log (docs/MANUAL.md, "Retention"); the loop ends with bg, before the store
// closes.
func (a *App) setupStore(ctx context.Context, o Options) error {
	st := o.Store
	if st == nil {
		sw, closeStore, err := openStore(ctx, a.Config.DatabaseURL, a.Log.Named("store"))
		if err != nil {
			return err
		}
		a.closers = append(a.closers, closeStore)
		st = sw
	}
	a.Store = st
	retained, now := make(chan struct{}), o.Now
	if now == nil {
		now = time.Now
	}
	go func() {
		defer close(retained)
		store.Retain(a.bg, st, store.AgentData, a.Config.Retention, time.Minute, now, a.Log.Named("retention"))
	}()
	a.closers = append(a.closers, func() { <-retained })
	return nil
}

// toolSet builds the tool registry (built-ins, the options' extra tools,
// the configured providers, then the outgoing A2A client, whose verbs are
// tools and which is the engine's Delegator) and resolves the persona's
// tools from it: the built-ins every persona gets (load_skill,
// report_finding, memory_*), the A2A verbs, and AGENT_TOOLS. An unknown
// tool is a configuration error naming AGENT_TOOLS and where it was set.
func (a *App) toolSet(ctx context.Context, o Options) (tools.Set, *a2aclient.Client, error) {
	cfg := a.Config
	reg := tools.NewRegistry(builtin.Tools()...)
	a.Registry = reg
	for _, t := range o.ExtraTools {
		reg.Add(t)
	}
	if err := a.toolProviders(ctx, reg); err != nil {
		return nil, nil, err
	}
	names := append([]string{}, builtin.Names...)
	a2aOut, err := a.newA2AClient()
	if err != nil {
		return nil, nil, err
	}
	for _, t := range a2aOut.Tools() {
		reg.Add(t)
		names = append(names, t.Name())
	}
	names = append(append(names, cfg.Tools...), a.mcpExternal...)
	set, err := reg.Resolve(names)
	if err != nil {
		var ute *tools.UnknownToolError
		if errors.As(err, &ute) {
			s := cfg.Settings()["AGENT_TOOLS"]
			where := s.Where
			if s.Source == config.SourceEnv {
				where = "environment"
			}
			return nil, nil, &config.Error{Var: "AGENT_TOOLS", Where: where, Msg: ute.Error()}
		}
		return nil, nil, err
	}
	return set, a2aOut, nil
}

// Info is GET /info.
type Info struct {
	Agent      InfoAgent                 `json:"agent"`
	Version    string                    `json:"version"`
	Settings   map[string]config.Setting `json:"settings"`
	Tools      []tools.Spec              `json:"tools"`
	Skills     []InfoSkill               `json:"skills"`
	Pulse      []InfoPulse               `json:"pulse"`
	Store      string                    `json:"store"`
	StoreState string                    `json:"store_state"`
	Model      string                    `json:"model"`
	Mode       string                    `json:"mode"`
	// TokenBudget is the model token ceiling and what is left of today's.
	TokenBudget engine.BudgetStatus `json:"token_budget"`
	// UnknownSettings are environment variables with the agent's prefixes
	// that are not settings, each with a "did you mean".
	UnknownSettings []settings.Unknown `json:"unknown_settings"`
	// Warnings are the configuration's and the persona's, as logged at start.
	Warnings []string `json:"warnings"`
	// MCP is what POST /mcp and `agent mcp` serve.
	MCP InfoMCP `json:"mcp"`
	// Budget is the chain of time budgets a run keeps (budget.go).
	Budget []InfoBudget `json:"budget"`
}

// InfoMCP is /info's MCP block.
type InfoMCP struct {
	// Served names the tools served (MCP_SERVE_MUTATING adds the mutating
	// ones an autonomous run may call).
	Served        []string `json:"served"`
	ServeMutating bool     `json:"serve_mutating"`
	// Servers are AGENT_MCP_SERVERS, each connected or down.
	Servers []mcpclient.Status `json:"servers"`
}

type InfoAgent struct {
	Persona string `json:"persona"`
	Slug    string `json:"slug"`
	Name    string `json:"display_name"`
}

type InfoSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type InfoPulse struct {
	Cadence string `json:"cadence"`
	Task    string `json:"task"`
}

func (a *App) info(set tools.Set, model string) Info {
	p := a.Config.Persona
	in := Info{
		Agent:      InfoAgent{Persona: p.Name, Slug: p.Slug, Name: a.Config.DisplayName},
		Version:    Version,
		Settings:   a.Config.Settings(),
		Tools:      set.Specs(),
		Skills:     []InfoSkill{},
		Pulse:      []InfoPulse{},
		Store:      a.Store.Kind(),
		StoreState: a.Store.Kind(),
		Model:      model,
		Mode:       "deterministic",

		TokenBudget: a.Engine.TokenBudget(),

		UnknownSettings: append([]settings.Unknown{}, a.Config.Unknown...),
		Warnings:        a.warnings(),
		Budget:          a.budgetChain(),
		MCP:             InfoMCP{Served: append([]string{}, a.mcpServed...), ServeMutating: a.Config.MCPServeMutating, Servers: []mcpclient.Status{}},
	}
	if a.mcpClient != nil {
		in.MCP.Servers = a.mcpClient.Status()
	}
	if sw, ok := a.Store.(interface{ State() string }); ok {
		in.StoreState = sw.State()
	}
	if model != "none" {
		in.Mode = "model"
	}
	for _, s := range p.Skills {
		in.Skills = append(in.Skills, InfoSkill{Name: s.Name, Description: s.Description})
	}
	for _, t := range p.Pulse {
		in.Pulse = append(in.Pulse, InfoPulse{Cadence: string(t.Cadence), Task: t.Text})
	}
	return in
}

// Serve serves HTTP on l until Shutdown.
func (a *App) Serve(l net.Listener) error {
	a.httpSrv = api.NewServer(a.Server, a.timeouts)
	err := a.httpSrv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown drains: /ready turns 503, new runs are refused, running runs may
// finish until ctx ends and are then marked failed; then HTTP stops.
func (a *App) Shutdown(ctx context.Context) error {
	a.Server.Drain()
	a.bgCancel()
	errRuns := a.Engine.Shutdown(ctx)
	if a.a2a != nil {
		a.a2a.Wait() // the audit entries of runs that just ended are written
	}
	var errHTTP error
	if a.httpSrv != nil {
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errHTTP = a.httpSrv.Shutdown(hctx)
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	return errors.Join(errRuns, errHTTP)
}

// warnings are the configuration's (settings without effect, unknown
// variables) and the persona's (an unknown PULSE.md section, a stray file).
func (a *App) warnings() []string {
	out := append([]string{}, a.Config.Warnings...)
	for _, w := range a.Config.Persona.Warnings {
		out = append(out, "persona "+a.Config.Persona.Name+": "+w)
	}
	return out
}

// logWarnings logs every warning once, at start.
func (a *App) logWarnings() {
	for _, w := range a.warnings() {
		a.Log.Warn("configuration: " + w)
	}
}

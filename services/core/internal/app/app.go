// Package app assembles the core: webhook → pipeline → dispatcher, the
// dashboard API, health, readiness and metrics. It never touches signals or
// exits, so tests embed it (main owns both).
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/readiness"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
	"github.com/kubecrew/kubecrew/services/core/internal/dashboard"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
	"github.com/kubecrew/kubecrew/services/core/internal/escalate"
	"github.com/kubecrew/kubecrew/services/core/internal/events"
	"github.com/kubecrew/kubecrew/services/core/internal/metrics"
	"github.com/kubecrew/kubecrew/services/core/internal/notify"
	"github.com/kubecrew/kubecrew/services/core/internal/pipeline"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// Deps are the core's dependencies. Only Store is required.
type Deps struct {
	Store store.CoreStore
	// Registerer and Gatherer back /metrics (nil: a private registry with
	// the Go and process collectors).
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	Log        *zap.Logger
	Now        func() time.Time
	NewID      func() string
	// HTTPClient calls the agents (nil: a client with its own transport).
	HTTPClient *http.Client
	// MaintainEvery is the period of the background upkeep (reclaiming
	// lost investigations, offering free slots to queued alerts). 0: 30s.
	MaintainEvery time.Duration
	// NotifyRetry and NotifyPoll shorten the chat posts' retry waits and
	// chain polling (tests); nil/0: the notifier's defaults.
	NotifyRetry []time.Duration
	NotifyPoll  time.Duration
	// Timeouts override the HTTP server's (tests shorten them); nil is
	// api.DefaultTimeouts of AGENT_CALL_TIMEOUT.
	Timeouts *kapi.Timeouts
}

// peerStore is a store shared with other core replicas that carries
// their notes (*store.Switch, *store.Postgres; pipeline/peers.go).
type peerStore interface {
	pipeline.Peers
	HearPeers(fn func(store.PeerNote))
}

// App is one core process.
type App struct {
	cfg      config.Config
	d        Deps
	routes   *route.Routes
	metrics  *metrics.Metrics
	client   *dispatch.Client
	pipe     *pipeline.Pipeline
	disp     *dispatch.Dispatcher
	notifier *notify.Notifier
	esc      *escalate.Escalate
	handler  http.Handler
	srv      *http.Server
	ln       net.Listener
	stop     context.CancelFunc
	bg       sync.WaitGroup
	serveErr chan error
	// apiDeps are the dashboard API's; upkeep re-sends the kill switch with them.
	apiDeps api.Deps
	// events carries each decision and investigation change to
	// GET /api/v1/events; pub is the store that publishes them.
	events *events.Broker
	pub    events.Store
}

// LoadRoutes reads cfg.RoutesFile, or the built-in routes when it is empty.
func LoadRoutes(cfg config.Config) (*route.Routes, error) {
	name, data := "built-in routes", route.DefaultFile
	if cfg.RoutesFile != "" {
		b, err := os.ReadFile(cfg.RoutesFile)
		if err != nil {
			return nil, fmt.Errorf("ROUTES_FILE: %w", err)
		}
		name, data = cfg.RoutesFile, b
	}
	return route.Parse(name, data, route.Options{
		DefaultCooldown: cfg.Cooldown,
		CallTimeout:     cfg.CallTimeout,
		Resolve:         config.ResolveAgent,
		Forbidden: map[string]string{
			config.ActorAgent: "alerts go to the read-only triager (platform-sre) first; k8s-engineer acts only on a delegated finding",
		},
	})
}

// New assembles a core. routes nil: LoadRoutes(cfg).
func New(cfg config.Config, routes *route.Routes, d Deps) (*App, error) {
	if d.Store == nil {
		return nil, errors.New("app: a store is required")
	}
	if routes == nil {
		var err error
		if routes, err = LoadRoutes(cfg); err != nil {
			return nil, err
		}
	}
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	// The secret settings are redacted by value wherever text leaves the
	// process (docs/MANUAL.md, "Redaction"), before anything is served.
	redact.Known(cfg.SecretValues...)
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		d.Registerer, d.Gatherer = reg, reg
	}
	if d.Gatherer == nil {
		d.Gatherer = prometheus.DefaultGatherer
	}
	if d.MaintainEvery <= 0 {
		d.MaintainEvery = 30 * time.Second
	}
	a := &App{cfg: cfg, d: d, routes: routes, metrics: metrics.New(d.Registerer), events: events.NewBroker()}
	a.pub = events.Store{CoreStore: d.Store, B: a.events}
	a.client = dispatch.NewClient(cfg.Peers, cfg.AuthToken, d.HTTPClient)
	var err error
	if a.notifier, err = a.newNotifier(); err != nil {
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	a.stop = stop
	p, err := pager.New(pager.Config{Target: cfg.Page.Target, Key: cfg.Page.Key, URL: cfg.Page.URL})
	if err != nil && !errors.Is(err, pager.ErrNoPager) {
		stop()
		return nil, err
	}
	a.esc = escalate.New(pager.NewEscalator(p, d.Store, d.Now, d.Log.Named("pager")), d.Store, cfg.PublicURL, d.Log)
	a.disp = dispatch.New(a.client, a.pub, dispatch.Options{
		Timeout: cfg.CallTimeout, Now: d.Now, Log: d.Log, Metrics: a.metrics, Notifier: a.notifier, Escalate: a.esc,
	})
	peers, _ := d.Store.(peerStore)
	a.pipe = pipeline.New(pipeline.Options{
		Store: a.pub, Routes: routes, Starter: a.disp, Now: d.Now, NewID: d.NewID, Log: d.Log, Metrics: a.metrics,
		StaleAfter: a.staleAfter(), Background: bg, Resolved: a.notifier, Escalate: a.esc,
		Clusters: pipeline.Clusters{Label: cfg.ClusterLabel, Default: cfg.DefaultCluster, Others: cfg.Clusters},
		Peers:    peers,
	})
	if peers != nil {
		peers.HearPeers(a.pipe.Heard) // the other replicas' incidents (docs/MANUAL.md, "Storms")
	}
	a.metrics.InitAgents(a.pipe.Agents())
	if a.handler, err = a.router(); err != nil {
		stop()
		return nil, err
	}
	// Before serving: reclaim what a previous process left running and
	// dispatch what it left queued (retention waits for the first tick).
	a.reclaim(bg)
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.maintain(bg)
	}()
	return a, nil
}

// staleAfter: an investigation with no outcome after this is presumed lost
// (its core died mid-call): the call timeout plus the outcome's retries.
func (a *App) staleAfter() time.Duration { return a.cfg.CallTimeout + time.Minute }

func (a *App) router() (http.Handler, error) {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, dashboard.Headers, kapi.RejectControlChars)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, http.StatusNotFound, "no such path: %s", r.URL.Path)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path)
	})
	r.Get("/health", func(w http.ResponseWriter, _ *http.Request) {
		api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/ready", a.ready)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(a.d.Gatherer, promhttp.HandlerOpts{}))
	fleet := make([]api.Registered, 0, len(config.Fleet))
	alerted := map[string]bool{}
	for _, s := range a.routes.Agents() {
		alerted[s] = true
	}
	for _, ag := range config.Fleet {
		u, _ := a.client.URL(ag.Slug)
		fleet = append(fleet, api.Registered{Slug: ag.Slug, Persona: ag.Persona, URL: u, ReceivesAlerts: alerted[ag.Slug]})
	}
	a.apiDeps = api.Deps{
		Store: a.d.Store, Agents: a.client, Fleet: fleet, PRSources: a.prSources(), Resolve: config.ResolveAgent,
		RunTimeout: a.cfg.CallTimeout, Log: a.d.Log,
		ActionsStore: a.d.Store, ActionsAgents: a.client, Events: a.events,
	}
	// The dashboard reads the same API, in process, behind its own door
	// (docs/MANUAL.md, "Dashboard").
	inner := chi.NewRouter()
	inner.Use(kapi.RejectControlChars)
	api.Routes(inner, a.apiDeps)
	tokens := httpauth.Tokens{Full: a.cfg.AuthToken, Read: a.cfg.AuthReadToken}
	dash, err := dashboard.New(dashboard.Deps{API: inner, Tokens: tokens, Index: api.Index(buildinfo.Version), Now: a.d.Now, Log: a.d.Log.Named("dashboard")})
	if err != nil {
		return nil, err
	}
	dash.Routes(r)
	r.Group(func(r chi.Router) {
		// Every route but the probes, /metrics and the dashboard's pages
		// (docs/MANUAL.md, "Authentication"); a signed-in dashboard may GET.
		r.Use(dash.CookieOr(tokens.Middleware("kubecrew-core")))
		r.With(kapi.AllowQuery()).Get("/info", a.info)
		r.Method(http.MethodPost, "/api/v1/alerts", webhook.Handler(a.pipe, a.d.Log, a.metrics, a.cfg.WebhookMaxBytes))
		api.Routes(r, a.apiDeps)
	})
	return r, nil
}

// prSources are the agents the core asks for the forge's pull requests
// (docs/MANUAL.md, "Dashboard"): those that hold forge identities (config.
// ForgeAgents) in the default cluster and in every other one listed.
func (a *App) prSources() []api.Registered {
	var out []api.Registered
	for _, cluster := range append([]string{""}, a.cfg.Clusters...) {
		for _, slug := range config.ForgeAgents {
			if cluster != "" {
				slug = cluster + "/" + slug
			}
			if u, ok := a.client.URL(slug); ok {
				out = append(out, api.Registered{Slug: slug, Persona: config.PersonaOf(slug[strings.LastIndex(slug, "/")+1:]), URL: u})
			}
		}
	}
	return out
}

func (a *App) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	code, body := readiness.Evaluate(ctx, []readiness.Check{{
		Name: config.DepStore, Required: a.cfg.ReadyRequire[config.DepStore], Probe: a.storeProbe,
	}})
	// "store" is what serves now; "store_state" says why it is memory, if
	// it is (the fall-open store).
	if body["ready"] == true {
		body["status"] = "ready"
	} else {
		body["status"] = "not ready"
	}
	body["store_state"] = body[config.DepStore]
	body[config.DepStore] = a.d.Store.Kind()
	// Without a token: which dependency fails, never its address.
	if (httpauth.Tokens{Full: a.cfg.AuthToken, Read: a.cfg.AuthReadToken}).Check(r) == httpauth.None {
		body = readiness.Public(body)
	}
	api.WriteJSON(w, code, body)
}

// storeProbe: memory without DATABASE_URL and Postgres are usable. A
// DATABASE_URL Postgres refused (no such database, credentials,
// permissions) is not; nor is an outage when several replicas share the
// database (CORE_REPLICAS), since each would then dedupe alone. A single
// core rides out an outage from memory.
func (a *App) storeProbe(ctx context.Context) readiness.Result {
	sw, ok := a.d.Store.(*store.Switch)
	if !ok {
		return readiness.Result{State: a.d.Store.Kind(), Err: a.d.Store.Ping(ctx)}
	}
	res := readiness.Result{State: sw.State()}
	err := sw.Usable()
	switch {
	case err == nil:
	case store.Refused(err):
		res.Err = fmt.Errorf("DATABASE_URL is refused by Postgres (serving from memory until it is fixed): %w", err)
	case a.cfg.Replicas > 1:
		res.Err = fmt.Errorf("DATABASE_URL unreachable and CORE_REPLICAS=%d: a replica serving from memory would dedupe alone: %w", a.cfg.Replicas, err)
	}
	return res
}

// Handler is the core's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Start listens on cfg.ListenAddr (":0" picks a port; see Addr) and serves
// in the background.
func (a *App) Start(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", a.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("LISTEN_ADDR %s: %w", a.cfg.ListenAddr, err)
	}
	a.ln = ln
	// A manual run is answered within AGENT_CALL_TIMEOUT: that bounds
	// every write but the event stream's, which sets its own (docs/MANUAL.md,
	// "Authentication").
	t := kapi.DefaultTimeouts(a.cfg.CallTimeout)
	if a.d.Timeouts != nil {
		t = *a.d.Timeouts
	}
	a.srv = kapi.NewServer(a.handler, t)
	a.srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	a.srv.ErrorLog = zap.NewStdLog(a.d.Log.Named("http"))
	a.serveErr = make(chan error, 1)
	go func() {
		err := a.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		a.serveErr <- err
	}()
	a.d.Log.Info("core listening", zap.String("addr", ln.Addr().String()), zap.String("store", a.d.Store.Kind()),
		zap.Duration("agent_call_timeout", a.cfg.CallTimeout), zap.Duration("alert_cooldown", a.cfg.Cooldown),
		zap.String("routes", a.routes.Source), zap.Bool("auth", a.cfg.AuthToken != ""))
	return nil
}

// Addr is the address Start listens on.
func (a *App) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// Done reports the server's end (nil after Shutdown, else the error).
func (a *App) Done() <-chan error { return a.serveErr }

// Shutdown stops accepting requests, waits for running investigations until
// ctx ends (then cuts them short, recorded as failed) and stops upkeep.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	a.events.Close() // the event streams end, or Shutdown would wait for them
	if a.srv != nil {
		if err := a.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	if err := a.disp.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := a.notifier.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	a.stop()
	a.bg.Wait()
	a.esc.Wait()
	return errors.Join(errs...)
}

// WaitIdle blocks until no investigation runs and no chat post is in
// flight (tests).
func (a *App) WaitIdle() { a.disp.Wait(); a.notifier.Wait() }

// Pipeline exposes the alert pipeline (tests and benchmarks).
func (a *App) Pipeline() *pipeline.Pipeline { return a.pipe }

// Info is GET /info: the core's effective configuration (secrets
// redacted), the environment variables that look like settings but are
// not, and the start-up warnings.
type Info struct {
	Version         string                    `json:"version"`
	Settings        map[string]config.Setting `json:"settings"`
	UnknownSettings []settings.Unknown        `json:"unknown_settings"`
	Warnings        []string                  `json:"warnings"`
	// Budget is the core's part of the time-budget chain (budget.go).
	Budget []InfoBudget `json:"budget"`
}

func (a *App) info(w http.ResponseWriter, _ *http.Request) {
	api.WriteJSON(w, http.StatusOK, Info{
		Version: buildinfo.Version, Settings: a.cfg.Settings,
		UnknownSettings: append([]settings.Unknown{}, a.cfg.Unknown...), Warnings: append([]string{}, a.cfg.Warnings...),
		Budget: budgetChain(a.cfg),
	})
}

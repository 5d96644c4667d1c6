// Package a2aserver is the agent's incoming A2A side: the JSON-RPC
// endpoint POST /invoke served through the official SDK's transport with
// our own request handler (task id = run id, runs on the same engine), the
// agent card, and the audit log over HTTP (GET /a2a/log). The outgoing side
// (the ask/notify/delegate tools, the engine's Delegator) is
// internal/a2aclient; the protocol rules shared with other binaries live in
// pkg/a2a.
package a2aserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Store is what the A2A side reads and writes: runs (tasks/get on finished
// runs) and the audit log.
type Store interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	store.Audit
}

// Engine is the run engine as the A2A side uses it.
type Engine interface {
	Start(ctx context.Context, req api.RunRequest) (*engine.Run, error)
	Get(id string) (*engine.Run, bool)
	RunningDiscussion(id string) (*engine.Run, bool)
}

var _ Engine = (*engine.Engine)(nil)

// Options are the service's dependencies and settings.
type Options struct {
	Persona *persona.Persona
	// Engine runs the received messages (required).
	Engine Engine
	// DisplayName is the card's name (AGENT_DISPLAY_NAME); default: the
	// persona name, capitalised.
	DisplayName string
	Version     string
	// Token is AUTH_TOKEN: declared on the card.
	Token    string
	MaxDepth int
	Store    Store
	// Traces and Metrics are shared with the outgoing side (a2aclient);
	// nil: fresh ones, unregistered.
	Traces  *a2aclient.Traces
	Metrics *a2aclient.Metrics
	// PublicURL, when set, is the card's /invoke address; otherwise it is
	// derived from each card request's Host.
	PublicURL string
	Now       func() time.Time
	NewID     func() string
	Log       *zap.Logger
}

// Service is one agent's incoming A2A side.
type Service struct {
	o       Options
	self    persona.Info
	eng     Engine
	traces  *a2aclient.Traces
	metrics *a2aclient.Metrics
	log     *zap.Logger

	settling sync.WaitGroup // one per received message whose outcome is not recorded yet
}

// New builds the service. Mount it before serving.
func New(o Options) (*Service, error) {
	if o.Persona == nil {
		return nil, errors.New("a2aserver: a persona is required")
	}
	if o.Engine == nil {
		return nil, errors.New("a2aserver: an engine is required")
	}
	if o.Store == nil {
		return nil, errors.New("a2aserver: a store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = a2a.DefaultMaxDepth
	}
	if o.Traces == nil {
		o.Traces = a2aclient.NewTraces()
	}
	if o.Metrics == nil {
		o.Metrics = a2aclient.NewMetrics(nil)
	}
	return &Service{o: o, self: o.Persona.Info, eng: o.Engine, traces: o.Traces, metrics: o.Metrics, log: o.Log}, nil
}

// Mount adds POST /invoke, the agent card and GET /a2a/log to r; the
// router's auth guard (server.Guard) protects all but the card.
func (s *Service) Mount(r chi.Router) {
	r.Post(a2a.InvokePath, s.InvokeHandler().ServeHTTP)
	r.Get(a2a.CardPath, s.serveCard)
	// The path of A2A before 0.3, still asked for by some clients.
	r.Get("/.well-known/agent.json", s.serveCard)
	r.Get("/a2a/log", s.serveLog)
}

// Wait blocks until every received message's run has ended and its outcome
// is in the audit log (shutdown, tests).
func (s *Service) Wait() { s.settling.Wait() }

// cardName is the display name, or the persona name capitalised.
func (s *Service) cardName() string {
	if n := strings.TrimSpace(s.o.DisplayName); n != "" {
		return n
	}
	n := s.self.Name
	if n == "" {
		return s.self.Slug
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

// cardDescription is Identity.md without its heading, as one paragraph.
func (s *Service) cardDescription() string {
	var lines []string
	for _, l := range strings.Split(s.o.Persona.IdentityMD, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			lines = append(lines, t)
		}
	}
	d := safetext.Clean(strings.Join(lines, " "), 2000)
	if d == "" {
		d = "kubecrew agent " + s.self.Slug
	}
	return d
}

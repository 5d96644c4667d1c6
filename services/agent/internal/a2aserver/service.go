// Package a2aserver is the agent's A2A side (ARCHITECTURE §3): the
// JSON-RPC endpoint POST /invoke served through the official SDK's
// transport with our own request handler (task id = run id, runs on the
// same engine), the agent card, the audit log over HTTP (GET /a2a/log), the
// ask_agent / notify_agent / delegate_task tools, and the engine's
// Delegator. The protocol rules shared with other binaries (metadata,
// depth, peers, conversions, the client) live in pkg/a2a.
package a2aserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/pkg/store"
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
	SetDelegator(d engine.Delegator)
}

var _ Engine = (*engine.Engine)(nil)

// Options are the service's dependencies and settings.
type Options struct {
	Persona *persona.Persona
	// DisplayName is the card's name (AGENT_DISPLAY_NAME); default: the
	// persona name, capitalised.
	DisplayName string
	Version     string
	Peers       *a2a.Peers
	// Token is AUTH_TOKEN: sent to peers, and declared on the card.
	Token       string
	MaxDepth    int
	CallTimeout time.Duration
	Store       Store
	// PublicURL, when set, is the card's /invoke address; otherwise it is
	// derived from each card request's Host.
	PublicURL  string
	HTTP       *http.Client
	Now        func() time.Time
	NewID      func() string
	Log        *zap.Logger
	Registerer prometheus.Registerer
}

// Service is one agent's A2A side.
type Service struct {
	o       Options
	self    persona.Info
	client  *a2a.Client
	metrics *metrics
	log     *zap.Logger

	settling sync.WaitGroup // one per received message whose outcome is not recorded yet

	mu     sync.Mutex
	eng    Engine
	traces map[string]string // discussion id → trace id it arrived with
}

// New builds the service. Attach it to the engine and Mount it before
// serving.
func New(o Options) (*Service, error) {
	if o.Persona == nil {
		return nil, errors.New("a2aserver: a persona is required")
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
	if o.CallTimeout <= 0 {
		o.CallTimeout = a2a.DefaultCallTimeout
	}
	if o.Peers == nil {
		p, err := a2a.NewPeers(nil, a2a.DefaultPeerTemplate, "kubecrew", o.Persona.Slug)
		if err != nil {
			return nil, err
		}
		o.Peers = p
	}
	s := &Service{o: o, self: o.Persona.Info, metrics: newMetrics(o.Registerer), log: o.Log, traces: map[string]string{}}
	c, err := a2a.NewClient(a2a.ClientOptions{
		Self: s.self, Peers: o.Peers, Token: o.Token, HTTP: o.HTTP, Audit: o.Store, MaxDepth: o.MaxDepth,
		Timeout: o.CallTimeout, Now: o.Now, Log: o.Log.Named("client"),
		Observe: func(v a2a.Verb, outcome string, d time.Duration) {
			s.metrics.messages.WithLabelValues(a2a.DirectionSent, string(v), outcome).Inc()
			if outcome != a2a.OutcomeRefused || d > 0 {
				s.metrics.callDuration.WithLabelValues(string(v), outcome).Observe(d.Seconds())
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.client = c
	return s, nil
}

// Client is the service's A2A client.
func (s *Service) Client() *a2a.Client { return s.client }

// Attach connects the service to the engine that runs received messages,
// and installs it as the engine's Delegator.
func (s *Service) Attach(e Engine) {
	s.mu.Lock()
	s.eng = e
	s.mu.Unlock()
	e.SetDelegator(s)
}

func (s *Service) engine() Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng
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

// setTrace remembers the trace id a discussion arrived with, so the
// messages its run sends carry it on. Keyed by discussion, not run: it is
// set before the run starts, and the cycle rule keeps one received run per
// discussion at a time.
func (s *Service) setTrace(discussionID, traceID string) {
	s.mu.Lock()
	s.traces[discussionID] = traceID
	s.mu.Unlock()
}

func (s *Service) dropTrace(discussionID string) {
	s.mu.Lock()
	delete(s.traces, discussionID)
	s.mu.Unlock()
}

// traceOf is the trace id of messages sent from run r: the one its
// discussion arrived with, else the discussion it belongs to or starts.
func (s *Service) traceOf(r *engine.Run) string {
	d := r.Req.DiscussionID
	if d == "" {
		return r.ID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.traces[d]; ok {
		return t
	}
	return d
}

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

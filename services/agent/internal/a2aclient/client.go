// Package a2aclient is the agent's outgoing A2A side: the ask_agent,
// notify_agent and delegate_task tools and the engine's Delegator, over
// pkg/a2a's client (which holds the protocol rules shared with other
// binaries: metadata, depth, peers, the audit record). The incoming side —
// POST /invoke, the agent card, GET /a2a/log — is internal/a2aserver.
package a2aclient

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Options are the client's dependencies and settings.
type Options struct {
	Self  persona.Info
	Peers *a2a.Peers
	// Token is AUTH_TOKEN, sent to peers.
	Token       string
	MaxDepth    int
	CallTimeout time.Duration
	// Audit records every message sent (required).
	Audit a2a.AuditLog
	// Traces are the trace ids received discussions arrived with (shared
	// with the incoming side); nil: a fresh table.
	Traces *Traces
	// Metrics are shared with the incoming side; nil: unregistered ones.
	Metrics *Metrics
	HTTP    *http.Client
	Now     func() time.Time
	Log     *zap.Logger
	// Evidence reads, when a finding is delegated, its typed evidence from
	// the cluster (pkg/kube Client.FindingEvidence); nil: a delegated
	// finding carries what the sweep set, and a model's none.
	Evidence EvidenceReader
}

// EvidenceReader reads a finding's typed evidence from the cluster: what
// a delegation carries to the agent that acts, never the sender's words.
type EvidenceReader interface {
	FindingEvidence(ctx context.Context, f api.Finding) (*api.ConfigChange, *api.OOMKill)
}

// Client sends this agent's A2A messages.
type Client struct {
	o      Options
	client *a2a.Client
}

// New builds the client. Its Tools go into the agent's registry and the
// client itself is the engine's Delegator.
func New(o Options) (*Client, error) {
	if o.Self.Slug == "" {
		return nil, errors.New("a2aclient: the sending persona is required")
	}
	if o.Audit == nil {
		return nil, errors.New("a2aclient: an audit log is required")
	}
	if o.Now == nil {
		o.Now = time.Now
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
	if o.Traces == nil {
		o.Traces = NewTraces()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.Peers == nil {
		p, err := a2a.NewPeers(nil, a2a.DefaultPeerTemplate, "kubecrew", o.Self.Slug)
		if err != nil {
			return nil, err
		}
		o.Peers = p
	}
	m := o.Metrics
	c, err := a2a.NewClient(a2a.ClientOptions{
		Self: o.Self, Peers: o.Peers, Token: o.Token, HTTP: o.HTTP, Audit: o.Audit, MaxDepth: o.MaxDepth,
		Timeout: o.CallTimeout, Now: o.Now, Log: o.Log,
		Observe: func(v a2a.Verb, outcome string, d time.Duration) {
			m.Messages.WithLabelValues(a2a.DirectionSent, string(v), outcome).Inc()
			if outcome != a2a.OutcomeRefused || d > 0 {
				m.CallDuration.WithLabelValues(string(v), outcome).Observe(d.Seconds())
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return &Client{o: o, client: c}, nil
}

// Sender is the underlying pkg/a2a client.
func (c *Client) Sender() *a2a.Client { return c.client }

// Traces remembers the trace id each received discussion arrived with, so
// the messages its run sends carry it on. Keyed by discussion, not run: the
// incoming side sets it before the run starts, and the cycle rule keeps
// one received run per discussion at a time.
type Traces struct {
	mu sync.Mutex
	m  map[string]string
}

// NewTraces returns an empty table.
func NewTraces() *Traces { return &Traces{m: map[string]string{}} }

// Set records the trace id discussion arrived with.
func (t *Traces) Set(discussionID, traceID string) {
	t.mu.Lock()
	t.m[discussionID] = traceID
	t.mu.Unlock()
}

// Drop forgets discussion.
func (t *Traces) Drop(discussionID string) {
	t.mu.Lock()
	delete(t.m, discussionID)
	t.mu.Unlock()
}

// Of is the trace id of messages sent from run r: the one its discussion
// arrived with, else the discussion it belongs to or starts.
func (t *Traces) Of(r *engine.Run) string {
	d := r.Req.DiscussionID
	if d == "" {
		return r.ID
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.m[d]; ok {
		return id
	}
	return d
}

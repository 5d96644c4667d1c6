package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aserver"
	"github.com/kubecrew/kubecrew/services/agent/internal/builtin"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// node is one agent on loopback: a real engine in deterministic mode (the
// test's playbook), the A2A service, an in-memory store, an HTTP server.
type node struct {
	slug  string
	svc   *a2aserver.Service
	out   *a2aclient.Client
	eng   *engine.Engine
	store *store.Memory
	srv   *httptest.Server
	url   string
}

// switchable lets servers exist (and their URLs be known to every peer)
// before their handlers are built.
type switchable struct {
	mu sync.RWMutex
	h  http.Handler
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	h := s.h
	s.mu.RUnlock()
	h.ServeHTTP(w, r)
}

type fleetOpts struct {
	token    string
	maxDepth int
	// maxConcurrent is every node's AGENT_MAX_CONCURRENT_RUNS (0: no limit).
	maxConcurrent int
	// evidence is every node's a2aclient.Options.Evidence (nil: none).
	evidence a2aclient.EvidenceReader
}

// startFleet starts one node per playbook (keyed by persona name or slug; a
// nil playbook is an agent without one), every node knowing every other
// through AGENT_PEERS-style static addresses.
func startFleet(t testing.TB, o fleetOpts, playbooks map[string]engine.Playbook) map[string]*node {
	t.Helper()
	nodes := map[string]*node{}
	handlers := map[string]*switchable{}
	static := map[string]string{}
	for name := range playbooks {
		info, err := persona.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		sw := &switchable{h: http.NotFoundHandler()}
		srv := httptest.NewServer(sw)
		t.Cleanup(srv.Close)
		nodes[info.Slug] = &node{slug: info.Slug, srv: srv, url: srv.URL}
		handlers[info.Slug] = sw
		static[info.Slug] = srv.URL
	}
	for name, pb := range playbooks {
		info, _ := persona.Resolve(name)
		n := nodes[info.Slug]
		p, err := persona.Load(agents.FS, info.Slug)
		if err != nil {
			t.Fatal(err)
		}
		peers, err := a2a.NewPeers(static, "", "", info.Slug)
		if err != nil {
			t.Fatal(err)
		}
		n.store = store.NewMemory(nil)
		traces, metrics := a2aclient.NewTraces(), a2aclient.NewMetrics(nil)
		n.out, err = a2aclient.New(a2aclient.Options{
			Self: p.Info, Peers: peers, Token: o.token, MaxDepth: o.maxDepth,
			CallTimeout: 20 * time.Second, Audit: n.store, Traces: traces, Metrics: metrics, Evidence: o.evidence,
		})
		if err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry(append(builtin.Tools(), n.out.Tools()...)...)
		set, err := reg.Resolve(reg.Names())
		if err != nil {
			t.Fatal(err)
		}
		n.eng, err = engine.New(engine.Options{
			Agent: p.Info, Persona: func() (*persona.Persona, error) { return p, nil }, Tools: set,
			Playbook: pb, Store: n.store, RunTimeout: 30 * time.Second, Delegator: n.out, MaxConcurrentRuns: o.maxConcurrent,
		})
		if err != nil {
			t.Fatal(err)
		}
		n.svc, err = a2aserver.New(a2aserver.Options{
			Persona: p, Engine: n.eng, Version: "test", Token: o.token, MaxDepth: o.maxDepth,
			Store: n.store, Traces: traces, Metrics: metrics,
		})
		if err != nil {
			t.Fatal(err)
		}
		r := chi.NewRouter()
		r.Use(server.Guard(httpauth.Tokens{Full: o.token}))
		n.svc.Mount(r)
		handlers[info.Slug].mu.Lock()
		handlers[info.Slug].h = r
		handlers[info.Slug].mu.Unlock()
		eng := n.eng
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = eng.Shutdown(ctx)
		})
	}
	return nodes
}

// audit returns the node's audit log, newest first.
func (n *node) audit(t testing.TB) []store.A2AEntry {
	t.Helper()
	es, _, err := n.store.ListA2A(context.Background(), n.slug, store.Page{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// settled waits until every run the node received has ended and its
// outcome is recorded, and returns the log.
func (n *node) settled(t testing.TB) []store.A2AEntry {
	t.Helper()
	n.svc.Wait()
	return n.audit(t)
}

func findEntry(es []store.A2AEntry, direction string) []store.A2AEntry {
	var out []store.A2AEntry
	for _, e := range es {
		if e.Direction == direction {
			out = append(out, e)
		}
	}
	return out
}

// relay is a playbook: a task "relay: a b c" asks agent a to "relay: b c";
// an empty list ends the chain. The answer nests every hop's answer.
func relay(ctx context.Context, r *engine.Run) error {
	hops := strings.Fields(strings.TrimPrefix(r.Req.Task, "relay:"))
	if len(hops) == 0 {
		r.SetAnswer("end of the chain at " + r.Agent().Slug)
		return nil
	}
	args, _ := json.Marshal(map[string]string{"agent_slug": hops[0], "question": "relay: " + strings.Join(hops[1:], " ")})
	out, _ := r.CallTool(ctx, "relay-1", "ask_agent", json.RawMessage(args))
	r.SetAnswer(r.Agent().Slug + " asked " + hops[0] + ": " + out)
	return nil
}

// echo answers its task and reports a finding when asked to.
func echo(_ context.Context, r *engine.Run) error {
	r.SetAnswer("echo: " + r.Req.Task)
	if strings.Contains(r.Req.Task, "finding") {
		r.ReportFinding(oomFinding())
	}
	return nil
}

// waitForCancel works until its run is cancelled.
func waitForCancel(ctx context.Context, _ *engine.Run) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

func oomFinding() api.Finding {
	f := api.Finding{Severity: "critical", Kind: "Deployment", Namespace: "kubecrew-fixtures", Name: "oomkill", Container: "app",
		Reason: "OOMKilled", Detail: "container app OOMKilled 4 times in 10 minutes (limit 64Mi)",
		Remediation: "raise the memory limit 1.5x through a GitOps PR", Remediable: true, Confidence: 0.9}
	f.Key = f.DeriveKey()
	return f
}

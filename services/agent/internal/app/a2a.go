package app

import (
	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aserver"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// PeersOff as PEER_URL_TEMPLATE switches the template off: the agent
// reaches only the peers AGENT_PEERS names (none: A2A calls answer that
// peers are off instead of dialling an in-cluster address).
const PeersOff = "none"

// newA2AClient builds the outgoing A2A side before the engine: its tools
// (ask_agent, notify_agent, delegate_task, which every persona gets) go
// into the registry and it is the engine's Delegator.
func (a *App) newA2AClient() (*a2aclient.Client, error) {
	cfg := a.Config
	template := cfg.PeerURLTemplate
	if template == PeersOff {
		template = "" // only AGENT_PEERS, if any: a standalone agent (docs/MANUAL.md "Running one agent")
	}
	peers, err := a2a.NewPeers(cfg.StaticPeers, template, cfg.Namespace, cfg.Persona.Slug)
	if err != nil {
		return nil, err
	}
	a.a2aTraces, a.a2aMetrics = a2aclient.NewTraces(), a2aclient.NewMetrics(a.metricsReg)
	var evidence a2aclient.EvidenceReader
	if a.Kube != nil {
		evidence = a.Kube // a delegated finding's typed evidence is read from the cluster
	}
	return a2aclient.New(a2aclient.Options{
		Self: cfg.Persona.Info, Peers: peers, Token: cfg.AuthToken, MaxDepth: cfg.MaxSocialDepth,
		CallTimeout: cfg.A2ACallTimeout, Audit: a.Store, Traces: a.a2aTraces, Metrics: a.a2aMetrics,
		Log:      a.Log.Named("a2a").Named("client"),
		Evidence: evidence,
	})
}

// mountA2A builds the incoming A2A side on the engine and mounts POST
// /invoke, the agent card and GET /a2a/log.
func (a *App) mountA2A(eng *engine.Engine) error {
	cfg := a.Config
	svc, err := a2aserver.New(a2aserver.Options{
		Persona: cfg.Persona, Engine: eng, DisplayName: cfg.DisplayName, Version: Version,
		Token: cfg.AuthToken, MaxDepth: cfg.MaxSocialDepth, Store: a.Store,
		Traces: a.a2aTraces, Metrics: a.a2aMetrics, Log: a.Log.Named("a2a"),
	})
	if err != nil {
		return err
	}
	a.a2a = svc
	svc.Mount(a.Server.Router())
	return nil
}

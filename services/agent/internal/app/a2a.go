package app

import (
	"context"
	"errors"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aserver"
)

// a2aTools returns ask_agent, notify_agent and delegate_task, which every
// persona gets.
func (a *App) a2aTools() ([]tools.Tool, error) {
	cfg := a.Config
	static, err := cfg.Peers()
	if err != nil {
		return nil, err
	}
	peers, err := a2a.NewPeers(static, cfg.String("PEER_URL_TEMPLATE"), cfg.String("AGENT_NAMESPACE"), cfg.Persona.Slug)
	if err != nil {
		return nil, err
	}
	svc, err := a2aserver.New(a2aserver.Options{
		Persona: cfg.Persona, DisplayName: cfg.String("AGENT_DISPLAY_NAME"), Version: Version,
		Peers: peers, Token: cfg.String("AUTH_TOKEN"), MaxDepth: cfg.Int("MAX_SOCIAL_DEPTH"),
		CallTimeout: cfg.Duration("A2A_CALL_TIMEOUT"), Store: a.Store,
		Log: a.Log.Named("a2a"), Registerer: a.metricsReg,
	})
	if err != nil {
		return nil, err
	}
	a.a2a = svc // setupA2A attaches it to the engine once that exists
	return svc.Tools(), nil
}

// setupA2A mounts POST /invoke, the agent card and GET /a2a/log, and
// installs the A2A delegator on the engine.
func (a *App) setupA2A(ctx context.Context) error {
	svc := a.a2a
	if svc == nil {
		return errors.New("the A2A service was not built (a2aTools must run before setupA2A)")
	}
	svc.Attach(a.Engine)
	svc.Mount(a.Server.Router())
	return nil
}

package app

import (
	"context"
	"errors"
	"sync"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aserver"
)

// a2aPending hands the A2A service from a2aTools (called before the engine
// exists) to setupA2A (called after), without a field on App.
var a2aPending sync.Map // *App → *a2aserver.Service

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
		Log: a.Log.Named("a2a"), Registerer: a.Reg,
	})
	if err != nil {
		return nil, err
	}
	a2aPending.Store(a, svc)
	return svc.Tools(), nil
}

// setupA2A mounts POST /invoke, the agent card and GET /a2a/log, and
// installs the A2A delegator on the engine.
func (a *App) setupA2A(ctx context.Context) error {
	v, ok := a2aPending.LoadAndDelete(a)
	if !ok {
		return errors.New("the A2A service was not built (a2aTools must run before setupA2A)")
	}
	svc := v.(*a2aserver.Service)
	svc.Attach(a.Engine)
	svc.Mount(a.Server.Router(), a.Server.RequireAuth)
	return nil
}

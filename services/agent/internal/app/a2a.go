package app

import (
	"context"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// a2aTools returns ask_agent, notify_agent and delegate_task, which every
// persona gets. (The A2A issue fills this in.)
func (a *App) a2aTools() ([]tools.Tool, error) { return nil, nil }

// setupA2A mounts POST /invoke and the agent card, and installs the A2A
// delegator on the engine. (The A2A issue fills this in.)
func (a *App) setupA2A(ctx context.Context) error { return nil }

package app

import (
	"context"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"go.uber.org/zap"

	openai "github.com/sashabaranov/go-openai"

	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

type (
	openaiRequest  = openai.ChatCompletionRequest
	openaiResponse = openai.ChatCompletionResponse
)

// toolProviders registers the cluster, GitOps and report tools the
// configuration asks for.
func (a *App) toolProviders(ctx context.Context, reg *tools.Registry) error {
	return nil
}

// playbook returns the persona's deterministic playbook, or nil.
func (a *App) playbook() engine.Playbook { return nil }

// backstop returns the persona's backstop, or nil.
func (a *App) backstop() engine.Backstop { return nil }

func (a *App) extraChecks() []server.Check { return nil }

// openStore opens the agent's store: in memory without DATABASE_URL, else
// Postgres falling open to memory while it is unreachable (never pinned).
func openStore(ctx context.Context, url string, log *zap.Logger) (store.AgentStore, func(), error) {
	sw, err := store.Open(ctx, url, log)
	if err != nil {
		return nil, nil, &config.Error{Var: "DATABASE_URL", Msg: err.Error()}
	}
	return sw, sw.Close, nil
}

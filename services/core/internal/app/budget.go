package app

import (
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
)

// InfoBudget is one step of the time-budget chain GET /info shows
// (docs/ARCHITECTURE.md, "The time budget"): the agent's own /info shows
// the rest of the chain, from the budget it is sent.
type InfoBudget struct {
	Step  string `json:"step"`
	Bound string `json:"bound"`
	Rule  string `json:"rule"`
}

// budgetChain is the core's part of the chain, from its settings.
func budgetChain(cfg config.Config) []InfoBudget {
	return []InfoBudget{
		{"agent call", cfg.CallTimeout.String(),
			"AGENT_CALL_TIMEOUT: how long one investigation waits for an agent's /run; a busy agent's 429 is sent again within it"},
		{"agent run", kapi.CallBudget(cfg.CallTimeout).Round(time.Millisecond).String(),
			"sent as budget_ms: the call less the margin the answer needs (a tenth, at most 10s); the agent's run takes the lesser of it and its RUN_TIMEOUT, so it ends with its report before the core stops waiting"},
		{"alert cooldown", cfg.Cooldown.String(),
			"ALERT_COOLDOWN (and each route's cooldown): longer than the call, refused at start otherwise, so an alert is not investigated twice at once"},
	}
}

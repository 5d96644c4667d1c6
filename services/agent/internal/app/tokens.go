package app

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// registerBudgetMetrics shows the token budget on /metrics, read from the
// engine at each scrape: what is left of today's (+Inf without a daily
// ceiling) and what was used (docs/MANUAL.md, "Model cost").
func registerBudgetMetrics(reg prometheus.Registerer, eng *engine.Engine) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kubecrew_agent_token_budget_left_tokens",
			Help: "Model tokens left of today's AGENT_TOKEN_BUDGET (UTC day); +Inf without a ceiling.",
		}, func() float64 {
			if l := eng.TokenBudget().LeftToday; l != nil {
				return float64(*l)
			}
			return math.Inf(1)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kubecrew_agent_token_budget_used_tokens",
			Help: "Model tokens (prompt + completion) the agent used today (UTC day).",
		}, func() float64 { return float64(eng.TokenBudget().UsedToday) }),
	)
}

package app

import "github.com/kubecrew/kubecrew/pkg/api"

// InfoBudget is one link of /info's chain of time budgets
// (docs/ARCHITECTURE.md, "The time budget"), outermost first. Bound is the
// value for a run bounded by RUN_TIMEOUT alone; a caller's budget_ms
// shortens every link below it.
type InfoBudget struct {
	Step  string `json:"step"`
	Bound string `json:"bound"`
	Rule  string `json:"rule"`
}

// budgetChain is the chain /info shows.
func (a *App) budgetChain() []InfoBudget {
	cfg := a.Config
	b := a.Engine.BudgetFor(api.RunRequest{})
	chain := []InfoBudget{
		{"run", b.Total.String(), "RUN_TIMEOUT, or the caller's budget_ms (the core's /run, A2A metadata kubecrew/budget_ms) less its report margin (a tenth, at most 10s) when that is shorter"},
	}
	if b.Model > 0 {
		chain = append(chain, InfoBudget{"model loop", b.Model.String(),
			"the run budget less the playbook's reserve (a fifth, at most 2m): when it runs out the deterministic playbook answers in the reserve and the run ends partial"})
	}
	if !cfg.Deterministic() {
		chain = append(chain,
			InfoBudget{"model call", cfg.LLMTimeout.String(), "LLM_TIMEOUT per attempt, within the model loop's time left"},
			InfoBudget{"synthesis attempt", cfg.SynthesisTimeout.String(), "SYNTHESIS_TIMEOUT per attempt, within the model loop's time left"})
	}
	chain = append(chain,
		InfoBudget{"A2A call", min(cfg.A2ACallTimeout, b.Total).String(),
			"A2A_CALL_TIMEOUT or the calling run's time left, whichever is shorter; the callee gets it less a margin as kubecrew/budget_ms"},
		InfoBudget{"pulse run", min(PulseTimeout(cfg), b.Total).String(),
			"PULSE_TIMEOUT (default half of PULSE_INTERVAL), sent to the run as its budget"})
	return chain
}

package config

import (
	"fmt"
	"time"
)

// budgetPart is a time setting that must fit inside RUN_TIMEOUT.
type budgetPart struct {
	name string
	d    time.Duration
	// equal allows d == RUN_TIMEOUT (a run bounded by both at once).
	equal bool
	why   string
}

// budgets refuses time settings that contradict the run's budget
// (docs/ARCHITECTURE.md, "The time budget"): every part of a run must fit
// inside RUN_TIMEOUT, or the agent would quietly cut it short. (An A2A
// call is not among them: it is bounded by the calling run's time left.)
func (c *Config) budgets() error {
	var parts []budgetPart
	if !c.Deterministic() {
		parts = append(parts,
			budgetPart{name: "LLM_TIMEOUT", d: c.LLMTimeout, why: "one model call could outlast the whole run"},
			budgetPart{name: "SYNTHESIS_TIMEOUT", d: c.SynthesisTimeout, why: "one synthesis attempt could outlast the whole run"})
	}
	if c.PulseTimeout > 0 {
		parts = append(parts, budgetPart{name: "PULSE_TIMEOUT", d: c.PulseTimeout, equal: true,
			why: "a pulse run would end at RUN_TIMEOUT, not at PULSE_TIMEOUT"})
	}
	for _, p := range parts {
		if p.d > c.RunTimeout || (p.d == c.RunTimeout && !p.equal) {
			return c.fail(p.name, fmt.Sprintf("%s (%s) is not shorter than RUN_TIMEOUT (%s, %s): %s; shorten %s or lengthen RUN_TIMEOUT",
				p.d, c.origin(p.name), c.RunTimeout, c.origin("RUN_TIMEOUT"), p.why, p.name))
		}
	}
	return nil
}

// origin says where a setting's value came from: default, environment or
// the persona's file and line.
func (c *Config) origin(name string) string {
	s := c.settings[name]
	switch {
	case s.Where != "":
		return s.Where
	case s.Source == SourceEnv:
		return "environment"
	}
	return s.Source
}

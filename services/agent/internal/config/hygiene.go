package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/settings"
)

// Prefixes are those of the agent's settings that are distinctive enough
// that an unknown variable carrying one is a typo worth a warning.
// GITHUB_ is left out: CI runners set dozens of GITHUB_* variables.
var Prefixes = []string{"AGENT_", "LLM_", "PULSE_", "GITOPS_", "A2A_", "AUTH_", "PEER_", "REPORT_", "DISCORD_",
	"SLACK_", "READY_", "PERSONA_", "SYNTHESIS_", "TOOL_", "MEMORY_", "CONFIGMAP_", "KUBE_", "PAGE_", "ACTIONS_"}

// coreSettings are the core's settings that share the agent's prefixes: an
// environment file given to both binaries carries them, and they are not
// typos.
var coreSettings = []string{"AGENT_CALL_TIMEOUT"}

// Specs is the settings table, for --help and the typo check.
func Specs() []settings.Spec {
	out := make([]settings.Spec, len(specs))
	for i, s := range specs {
		out[i] = settings.Spec{Name: s.name, Default: s.def, Help: s.help}
	}
	return out
}

// CheckEnviron records the variables of environ (os.Environ) that look
// like settings but are not, each with a "did you mean", and adds a
// warning for each.
func (c *Config) CheckEnviron(environ []string) {
	c.Unknown = settings.Unknowns(environ, Prefixes, Specs(), coreSettings...)
	for _, u := range c.Unknown {
		c.Warnings = append(c.Warnings, u.String()+": ignored")
	}
}

// coherence refuses settings that contradict each other where the agent
// would otherwise quietly do something else than asked, and warns about
// settings that have no effect.
func (c *Config) coherence() error {
	modelNamed := c.Model != "" && c.Model != "none"
	switch {
	case c.LLMBaseURL != "" && c.Model == "":
		return c.fail("AGENT_MODEL", "LLM_BASE_URL is set but AGENT_MODEL is not: name the model the endpoint serves, "+
			"or set AGENT_MODEL=none (or unset LLM_BASE_URL) for the deterministic playbooks")
	case modelNamed && c.LLMBaseURL == "":
		return c.fail("AGENT_MODEL", fmt.Sprintf("AGENT_MODEL=%s but LLM_BASE_URL is not set: set the endpoint "+
			"(e.g. http://host:11434/v1), or AGENT_MODEL=none for the deterministic playbooks", c.Model))
	}
	if err := c.budgets(); err != nil {
		return err
	}
	if err := c.auth(); err != nil {
		return err
	}
	warn := func(format string, args ...any) { c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...)) }
	if c.LLMFallbackBaseURL == "" && (c.LLMFallbackModel != "" || c.LLMFallbackAPIKey != "") {
		warn("LLM_FALLBACK_MODEL/LLM_FALLBACK_API_KEY are set without LLM_FALLBACK_BASE_URL: no fallback is used")
	}
	if c.LLMFallbackBaseURL != "" && !modelNamed {
		warn("LLM_FALLBACK_BASE_URL is set but the agent runs without a model (AGENT_MODEL=none): it is not used")
	}
	if c.LLMAPIKey != "" && c.LLMBaseURL == "" {
		warn("LLM_API_KEY is set without LLM_BASE_URL: it is not used")
	}
	if c.GitOpsForge != "github" && (c.GitHubToken != "" || c.GitHubAPIURL != "") {
		warn("GITHUB_TOKEN/GITHUB_API_URL are set but GITOPS_FORGE is %q, not github: they are not used", c.GitOpsForge)
	}
	return nil
}

// AuthDisabledWarning is logged at start and listed in /info when
// AUTH_DISABLED=true. Worded so that the log redactor leaves it whole (no
// "NAME: value" or "NAME=value" shape after a secret's name).
const AuthDisabledWarning = "AUTH_DISABLED=true: authentication is off, every route is open to anyone who reaches the port, and runs are never interactive; set AUTH_TOKEN outside a laptop"

// auth closes the door by default (docs/MANUAL.md, "Authentication"): no
// AUTH_TOKEN is a start-up error unless AUTH_DISABLED=true says so.
func (c *Config) auth() error {
	if setting, problem := httpauth.RequireToken(c.AuthToken, c.AuthReadToken, c.AuthDisabled); setting != "" {
		return c.fail(setting, problem)
	}
	if c.AuthDisabled {
		c.Warnings = append(c.Warnings, AuthDisabledWarning)
	}
	return nil
}

// Secrets names the settings that hold a secret: a process the agent
// starts (a stdio MCP server) does not inherit them.
func Secrets() []string {
	var out []string
	for _, s := range specs {
		if s.kind == kSecret {
			out = append(out, s.name)
		}
	}
	return out
}

// completionCap derives AGENT_MAX_COMPLETION_TOKENS when unset: the eighth
// of AGENT_CONTEXT_TOKENS the context budget keeps for the reply (docs/MANUAL.md,
// "How a run works"), so a request's prompt and its cap fit the window
// (vLLM refuses a request whose prompt plus max_tokens exceeds it). A cap
// above half the window leaves too little room for the transcript.
func (c *Config) completionCap() error {
	name := "AGENT_MAX_COMPLETION_TOKENS"
	if strings.TrimSpace(c.settings[name].Value) == "" {
		c.MaxAnswerTokens = c.ContextTokens / 8
		c.settings[name] = Setting{Value: strconv.Itoa(c.MaxAnswerTokens), Source: SourceDefault, Where: "AGENT_CONTEXT_TOKENS/8"}
		return nil
	}
	if c.MaxAnswerTokens > c.ContextTokens/2 {
		return c.fail(name, fmt.Sprintf("%d is more than half of AGENT_CONTEXT_TOKENS (%d): the transcript would have too little room; lower it or raise AGENT_CONTEXT_TOKENS",
			c.MaxAnswerTokens, c.ContextTokens))
	}
	return nil
}

// Package config resolves the agent's effective settings with one
// precedence, shown not hidden: built-in default < the persona's agent.env <
// the process environment. Every setting carries its source, and every
// malformed value fails start-up with a message naming the variable and, for
// persona values, the file and line.
package config

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Sources of a setting.
const (
	SourceDefault = "default"
	SourcePersona = "persona"
	SourceEnv     = "env"
)

// Setting is one effective value and where it came from.
type Setting struct {
	Value  string `json:"value"`
	Source string `json:"source"`
	// Where is "agent.env:12" for persona values.
	Where string `json:"where,omitempty"`
}

type kind int

const (
	kString kind = iota
	kInt
	kFloat
	kBool
	kDuration
	kSecret
	kURL
	kList
)

type spec struct {
	name string
	def  string
	kind kind
	help string
	// field is where Load puts the parsed value.
	field func(v *Values) any
}

// Values are the agent's settings, typed, parsed once by Load from the
// table below (each field is one variable; see its help there).
type Values struct {
	PersonaName        string        // AGENT_PERSONA
	Tools              []string      // AGENT_TOOLS
	Model              string        // AGENT_MODEL
	MaxIterations      int           // AGENT_MAX_ITERATIONS
	ContextTokens      int           // AGENT_CONTEXT_TOKENS
	MaxAnswerTokens    int           // AGENT_MAX_COMPLETION_TOKENS
	MaxCallsPerTurn    int           // AGENT_MAX_TOOL_CALLS_PER_TURN
	MaxCallsPerRun     int           // AGENT_MAX_TOOL_CALLS_PER_RUN
	MaxReplyChars      int           // AGENT_MAX_REPLY_CHARS
	MaxAnswerChars     int           // AGENT_MAX_ANSWER_CHARS
	MaxConcurrentRuns  int           // AGENT_MAX_CONCURRENT_RUNS
	Temperature        float64       // AGENT_TEMPERATURE
	DisplayName        string        // AGENT_DISPLAY_NAME
	LLMBaseURL         string        // LLM_BASE_URL
	LLMAPIKey          string        // LLM_API_KEY
	LLMTimeout         time.Duration // LLM_TIMEOUT
	LLMFallbackBaseURL string        // LLM_FALLBACK_BASE_URL
	LLMFallbackModel   string        // LLM_FALLBACK_MODEL
	LLMFallbackAPIKey  string        // LLM_FALLBACK_API_KEY
	SynthesisTimeout   time.Duration // SYNTHESIS_TIMEOUT
	RunTimeout         time.Duration // RUN_TIMEOUT
	ListenAddr         string        // LISTEN_ADDR
	PulseEnabled       bool          // PULSE_ENABLED
	PulseInterval      time.Duration // PULSE_INTERVAL
	PulseTimeout       time.Duration // PULSE_TIMEOUT
	Namespace          string        // AGENT_NAMESPACE
	ClusterName        string        // CLUSTER_NAME
	PodName            string        // POD_NAME
	PeerURLTemplate    string        // PEER_URL_TEMPLATE
	PeerList           []string      // AGENT_PEERS
	MaxSocialDepth     int           // MAX_SOCIAL_DEPTH
	A2ACallTimeout     time.Duration // A2A_CALL_TIMEOUT
	DatabaseURL        string        // DATABASE_URL
	RetentionText      string        // RETENTION
	Kubeconfig         string        // KUBECONFIG
	KubeContext        string        // KUBE_CONTEXT
	ConfigMapValueKeys []string      // CONFIGMAP_VALUE_KEYS
	AuthToken          string        // AUTH_TOKEN
	AuthReadToken      string        // AUTH_READ_TOKEN
	AuthDisabled       bool          // AUTH_DISABLED
	PersonaDir         string        // PERSONA_DIR
	ToolOutputMaxChars int           // TOOL_OUTPUT_MAX_CHARS
	MemoryMaxChars     int           // MEMORY_MAX_CHARS
	TokenBudget        int           // AGENT_TOKEN_BUDGET
	RunTokenBudget     int           // AGENT_RUN_TOKEN_BUDGET
	LogLevel           string        // LOG_LEVEL
	ReadyRequire       []string      // READY_REQUIRE
	GitOpsForge        string        // GITOPS_FORGE
	GitOpsRepo         string        // GITOPS_REPO
	GitOpsBranch       string        // GITOPS_BRANCH
	GitOpsPathTemplate string        // GITOPS_PATH_TEMPLATE
	GitOpsMaxOpenPRs   int           // GITOPS_MAX_OPEN_PRS
	GitOpsStaleAfter   time.Duration // GITOPS_STALE_AFTER
	GitOpsSettleAfter  time.Duration // GITOPS_SETTLE_AFTER
	GitHubToken        string        // GITHUB_TOKEN
	GitHubAPIURL       string        // GITHUB_API_URL
	GitHubAppID        int           // GITHUB_APP_ID
	GitHubAppInstall   int           // GITHUB_APP_INSTALLATION_ID
	GitHubAppKeyFile   string        // GITHUB_APP_PRIVATE_KEY_FILE
	DiscordWebhookURL  string        // DISCORD_WEBHOOK_URL
	SlackWebhookURL    string        // SLACK_WEBHOOK_URL
	ReportWebhookURL   string        // REPORT_WEBHOOK_URL
	ReportColor        string        // REPORT_COLOR

	// The action envelope (docs/MANUAL.md, "The action envelope").
	ActionsMode                 string   // ACTIONS_MODE
	RolloutRestartMode          string   // ROLLOUT_RESTART_MODE
	ActionsNamespaces           []string // ACTIONS_NAMESPACES
	ActionsRestartsPerHour      int      // ACTIONS_RESTARTS_PER_HOUR
	ActionsFleetRestartsPerHour int      // ACTIONS_FLEET_RESTARTS_PER_HOUR
	ActionsBumpsPer30Days       int      // ACTIONS_BUMPS_PER_30D
	ActionsFleetBumpsPer30Days  int      // ACTIONS_FLEET_BUMPS_PER_30D
	ActionsMaxGrowth            float64  // ACTIONS_MAX_GROWTH

	// MCP (docs/MANUAL.md, "MCP").
	MCPServeMutating bool     // MCP_SERVE_MUTATING
	MCPServers       string   // AGENT_MCP_SERVERS
	MCPReadTools     []string // AGENT_MCP_READ_TOOLS
	// Verify, then escalate (docs/MANUAL.md, "The action envelope").
	VerifySyncTimeout time.Duration // ACTIONS_VERIFY_SYNC_TIMEOUT
	VerifyWindow      time.Duration // ACTIONS_VERIFY_WINDOW
	VerifyInterval    time.Duration // ACTIONS_VERIFY_INTERVAL
	VerifyWatch       time.Duration // ACTIONS_VERIFY_WATCH
	PageTarget        string        // PAGE_TARGET
	PageKey           string        // PAGE_KEY
	PageURL           string        // PAGE_URL
	PageLinkBase      string        // PAGE_LINK_BASE

	// StaticPeers is AGENT_PEERS parsed: slug → base URL.
	StaticPeers map[string]string
	// Retention is RETENTION parsed (0 keeps records forever).
	Retention time.Duration
}

var specs = []spec{
	{"AGENT_PERSONA", "", kString, "noor|sol|vera|dax|ada or the slug", func(v *Values) any { return &v.PersonaName }},
	{"AGENT_TOOLS", "", kList, "comma list of tools (built-ins are always added)", func(v *Values) any { return &v.Tools }},
	{"AGENT_MODEL", "", kString, "model name; none = deterministic playbooks (default when LLM_BASE_URL is empty)", func(v *Values) any { return &v.Model }},
	{"AGENT_MAX_ITERATIONS", "15", kInt, "model calls before the ceiling ends the run cleanly", func(v *Values) any { return &v.MaxIterations }},
	{"AGENT_CONTEXT_TOKENS", "32000", kInt, "the model's context window: as a run's transcript nears it (tokens estimated as bytes/3), older tool outputs are compacted to head and tail", func(v *Values) any { return &v.ContextTokens }},
	{"AGENT_MAX_COMPLETION_TOKENS", "", kInt, "cap on each model answer, sent as max_tokens (max_completion_tokens where the endpoint asks for it); default AGENT_CONTEXT_TOKENS/8, the share the context budget keeps for the reply; 0 sends no cap", func(v *Values) any { return &v.MaxAnswerTokens }},
	{"AGENT_MAX_TOOL_CALLS_PER_TURN", "8", kInt, "tool calls run per model turn; the rest are answered 'not run'", func(v *Values) any { return &v.MaxCallsPerTurn }},
	{"AGENT_MAX_TOOL_CALLS_PER_RUN", "60", kInt, "tool calls per run; then the model must answer without tools (status partial)", func(v *Values) any { return &v.MaxCallsPerRun }},
	{"AGENT_MAX_REPLY_CHARS", "16000", kInt, "one model reply (its text, each tool call's arguments) is cut to this", func(v *Values) any { return &v.MaxReplyChars }},
	{"AGENT_MAX_ANSWER_CHARS", "16000", kInt, "a run's answer is cut to this (head and tail kept)", func(v *Values) any { return &v.MaxAnswerChars }},
	{"AGENT_MAX_CONCURRENT_RUNS", "4", kInt, "runs in flight at once (pulse, alert, A2A, manual; alert runs one at a time); over it POST /run answers 429 with Retry-After and A2A a busy error", func(v *Values) any { return &v.MaxConcurrentRuns }},
	{"AGENT_TEMPERATURE", "0", kFloat, "sampling temperature", func(v *Values) any { return &v.Temperature }},
	{"AGENT_DISPLAY_NAME", "", kString, "persona display name in reports", func(v *Values) any { return &v.DisplayName }},
	{"LLM_BASE_URL", "", kURL, "OpenAI-compatible endpoint, e.g. http://host:11434/v1", func(v *Values) any { return &v.LLMBaseURL }},
	{"LLM_API_KEY", "", kSecret, "API key for LLM_BASE_URL", func(v *Values) any { return &v.LLMAPIKey }},
	{"LLM_TIMEOUT", "400s", kDuration, "per model call", func(v *Values) any { return &v.LLMTimeout }},
	{"LLM_FALLBACK_BASE_URL", "", kURL, "fallback endpoint, tried on timeout, connection error, 5xx, 429", func(v *Values) any { return &v.LLMFallbackBaseURL }},
	{"LLM_FALLBACK_MODEL", "", kString, "fallback model (default AGENT_MODEL)", func(v *Values) any { return &v.LLMFallbackModel }},
	{"LLM_FALLBACK_API_KEY", "", kSecret, "API key for the fallback", func(v *Values) any { return &v.LLMFallbackAPIKey }},
	{"SYNTHESIS_TIMEOUT", "180s", kDuration, "per synthesis attempt", func(v *Values) any { return &v.SynthesisTimeout }},
	{"RUN_TIMEOUT", "1200s", kDuration, "whole-run bound", func(v *Values) any { return &v.RunTimeout }},
	{"LISTEN_ADDR", ":8000", kString, "HTTP listen address", func(v *Values) any { return &v.ListenAddr }},
	{"PULSE_ENABLED", "false", kBool, "run the pulse timer", func(v *Values) any { return &v.PulseEnabled }},
	{"PULSE_INTERVAL", "45m", kDuration, "sleep between pulse ticks", func(v *Values) any { return &v.PulseInterval }},
	{"PULSE_TIMEOUT", "", kDuration, "bound of one pulse run (default: half of PULSE_INTERVAL, at most RUN_TIMEOUT)", func(v *Values) any { return &v.PulseTimeout }},
	{"AGENT_NAMESPACE", "kubecrew", kString, "namespace of the fleet (peer URLs)", func(v *Values) any { return &v.Namespace }},
	{"CLUSTER_NAME", "default", kString, "the cluster's name in findings: with a finding's key it is its identity (new, still open, resolved)", func(v *Values) any { return &v.ClusterName }},
	{"POD_NAME", "", kString, "this pod's name (downward API); in a cluster the pulse leader is then chosen by the Lease kubecrew-pulse-<slug>", func(v *Values) any { return &v.PodName }},
	{"PEER_URL_TEMPLATE", "http://agent-{slug}.{namespace}.svc:8000", kString, "peer URL template", func(v *Values) any { return &v.PeerURLTemplate }},
	{"AGENT_PEERS", "", kList, "static peers slug=url,… (wins over the template)", func(v *Values) any { return &v.PeerList }},
	{"MAX_SOCIAL_DEPTH", "5", kInt, "A2A depth ceiling", func(v *Values) any { return &v.MaxSocialDepth }},
	{"A2A_CALL_TIMEOUT", "540s", kDuration, "blocking ask/delegate timeout", func(v *Values) any { return &v.A2ACallTimeout }},
	{"DATABASE_URL", "", kSecret, "Postgres URL; empty = in-memory store", func(v *Values) any { return &v.DatabaseURL }},
	{"RETENTION", "30d", kString, "runs with their traces, findings and the A2A log older than this are deleted (e.g. 30d, 720h; 0 keeps them)", func(v *Values) any { return &v.RetentionText }},
	{"KUBECONFIG", "", kString, "kubeconfig path; empty = in-cluster", func(v *Values) any { return &v.Kubeconfig }},
	{"KUBE_CONTEXT", "", kString, "kubeconfig context", func(v *Values) any { return &v.KubeContext }},
	{"CONFIGMAP_VALUE_KEYS", "", kList, "ConfigMap keys whose values k8s_get_yaml shows (default: keys only)", func(v *Values) any { return &v.ConfigMapValueKeys }},
	{"AUTH_TOKEN", "", kSecret, "bearer token every route but /health, /ready, /metrics and the agent card needs; required unless AUTH_DISABLED=true", func(v *Values) any { return &v.AuthToken }},
	{"AUTH_READ_TOKEN", "", kSecret, "optional read-only bearer token: opens GET routes only (dashboards); needs AUTH_TOKEN", func(v *Values) any { return &v.AuthReadToken }},
	{"AUTH_DISABLED", "false", kBool, "true: start without AUTH_TOKEN, every route open (a laptop only; warned at start, shown in /info; runs are never interactive)", func(v *Values) any { return &v.AuthDisabled }},
	{"PERSONA_DIR", "", kString, "directory overriding the embedded persona files (re-read each run)", func(v *Values) any { return &v.PersonaDir }},
	{"TOOL_OUTPUT_MAX_CHARS", "8000", kInt, "tool output budget (head 2/3, tail 1/3)", func(v *Values) any { return &v.ToolOutputMaxChars }},
	{"MEMORY_MAX_CHARS", "4000", kInt, "MEMORY budget in the prompt", func(v *Values) any { return &v.MemoryMaxChars }},
	{"AGENT_TOKEN_BUDGET", "2000000", kInt, "model tokens (prompt + completion) the agent may spend per UTC day; then runs use the playbook and say so (0: no ceiling)", func(v *Values) any { return &v.TokenBudget }},
	{"AGENT_RUN_TOKEN_BUDGET", "200000", kInt, "model tokens one run may spend; then it ends with the playbook (0: no ceiling)", func(v *Values) any { return &v.RunTokenBudget }},
	{"LOG_LEVEL", "info", kString, "debug|info|warn|error", func(v *Values) any { return &v.LogLevel }},
	{"READY_REQUIRE", "cluster,store,model", kList, "dependencies that must be usable for GET /ready to answer 200: cluster, store, model, gitops, or none", func(v *Values) any { return &v.ReadyRequire }},
	{"GITOPS_FORGE", "", kString, "github|local", func(v *Values) any { return &v.GitOpsForge }},
	{"GITOPS_REPO", "", kString, "owner/name, or a local repository path", func(v *Values) any { return &v.GitOpsRepo }},
	{"GITOPS_BRANCH", "main", kString, "base branch", func(v *Values) any { return &v.GitOpsBranch }},
	{"GITOPS_PATH_TEMPLATE", "", kString, "directories tried first for a workload's manifest, comma-separated, with {cluster} (CLUSTER_NAME), {namespace}, {name}: clusters/{cluster}/apps/{name}", func(v *Values) any { return &v.GitOpsPathTemplate }},
	{"GITOPS_MAX_OPEN_PRS", "5", kInt, "open agent PR cap", func(v *Values) any { return &v.GitOpsMaxOpenPRs }},
	{"GITOPS_STALE_AFTER", "168h", kDuration, "agent PRs older than this are reported stale", func(v *Values) any { return &v.GitOpsStaleAfter }},
	{"GITOPS_SETTLE_AFTER", "24h", kDuration, "a finding whose fix merged this recently gets no new PR", func(v *Values) any { return &v.GitOpsSettleAfter }},
	{"GITHUB_TOKEN", "", kSecret, "GitHub token", func(v *Values) any { return &v.GitHubToken }},
	{"GITHUB_API_URL", "", kURL, "GitHub API base (GHE, tests)", func(v *Values) any { return &v.GitHubAPIURL }},
	{"GITHUB_APP_ID", "0", kInt, "act as this GitHub App (with GITHUB_APP_INSTALLATION_ID and GITHUB_APP_PRIVATE_KEY_FILE) instead of GITHUB_TOKEN; 0: none", func(v *Values) any { return &v.GitHubAppID }},
	{"GITHUB_APP_INSTALLATION_ID", "0", kInt, "the GitHub App's installation on the GitOps repository's owner", func(v *Values) any { return &v.GitHubAppInstall }},
	{"GITHUB_APP_PRIVATE_KEY_FILE", "", kString, "the GitHub App's private key (PEM file); read when GITHUB_APP_ID is set", func(v *Values) any { return &v.GitHubAppKeyFile }},
	{"DISCORD_WEBHOOK_URL", "", kSecret, "Discord webhook", func(v *Values) any { return &v.DiscordWebhookURL }},
	{"SLACK_WEBHOOK_URL", "", kSecret, "Slack incoming webhook", func(v *Values) any { return &v.SlackWebhookURL }},
	{"REPORT_WEBHOOK_URL", "", kSecret, "generic JSON webhook", func(v *Values) any { return &v.ReportWebhookURL }},
	{"REPORT_COLOR", "", kString, "embed colour, e.g. 0x5865F2", func(v *Values) any { return &v.ReportColor }},
	{"ACTIONS_MODE", "act", kString, "act|propose: in propose (shadow mode) a change is prepared and recorded, not made; a namespace label kubecrew.io/actions=act|propose overrides it", func(v *Values) any { return &v.ActionsMode }},
	{"ROLLOUT_RESTART_MODE", "auto", kString, "auto|annotation|evict: how a rollout restart is made; auto evicts the pods one at a time (PodDisruptionBudgets respected) of a workload Flux or Argo CD applies, and writes the restartedAt annotation otherwise", func(v *Values) any { return &v.RolloutRestartMode }},
	{"ACTIONS_NAMESPACES", "", kList, "namespaces opted in to actions without the kubecrew.io/actions label", func(v *Values) any { return &v.ActionsNamespaces }},
	{"ACTIONS_RESTARTS_PER_HOUR", "3", kInt, "rollout restarts per workload per hour; more become a recommendation for a human", func(v *Values) any { return &v.ActionsRestartsPerHour }},
	{"ACTIONS_FLEET_RESTARTS_PER_HOUR", "10", kInt, "rollout restarts per hour across the fleet", func(v *Values) any { return &v.ActionsFleetRestartsPerHour }},
	{"ACTIONS_BUMPS_PER_30D", "3", kInt, "memory-bump PRs per workload per 30 days", func(v *Values) any { return &v.ActionsBumpsPer30Days }},
	{"ACTIONS_FLEET_BUMPS_PER_30D", "30", kInt, "memory-bump PRs per 30 days across the fleet", func(v *Values) any { return &v.ActionsFleetBumpsPer30Days }},
	{"ACTIONS_MAX_GROWTH", "4", kFloat, "a memory limit never goes above this many times the first value seen", func(v *Values) any { return &v.ActionsMaxGrowth }},
	{"AGENT_MCP_SERVERS", "", kString, "other MCP servers whose tools the agent adds as <name>_<tool>: name=URL or name=command args, separated by ';'", func(v *Values) any { return &v.MCPServers }},
	{"AGENT_MCP_READ_TOOLS", "", kList, "those tools (names or patterns like k8s_pods_*) this persona may use as read-only, when their server annotates them readOnlyHint; every other one is mutating", func(v *Values) any { return &v.MCPReadTools }},
	{"MCP_SERVE_MUTATING", "false", kBool, "also serve over MCP the mutating tools an autonomous run may call (still through the execution gate and the envelope); off: read-only tools only", func(v *Values) any { return &v.MCPServeMutating }},
	{"ACTIONS_VERIFY_SYNC_TIMEOUT", "15m", kDuration, "after a restart or a merged bump, how long to wait for the change to be live (rolled out; the merged limit in the live spec) before checking anyway", func(v *Values) any { return &v.VerifySyncTimeout }},
	{"ACTIONS_VERIFY_WINDOW", "10m", kDuration, "how long a workload must go without an OOM kill, and be available, for its fix to count as working", func(v *Values) any { return &v.VerifyWindow }},
	{"ACTIONS_VERIFY_INTERVAL", "30s", kDuration, "how often the follow-up check reads the workload", func(v *Values) any { return &v.VerifyInterval }},
	{"ACTIONS_VERIFY_WATCH", "24h", kDuration, "how long a workload whose fix did not work is watched for its recovery (which resolves the page)", func(v *Values) any { return &v.VerifyWatch }},
	{"PAGE_TARGET", "", kString, "pagerduty|opsgenie|webhook: where a human is paged when a fix did not work (empty: nobody is paged; the check is still recorded)", func(v *Values) any { return &v.PageTarget }},
	{"PAGE_KEY", "", kSecret, "PagerDuty Events API v2 routing key, or Opsgenie API integration key", func(v *Values) any { return &v.PageKey }},
	{"PAGE_URL", "", kSecret, "the incident API's base URL (default https://events.pagerduty.com, https://api.opsgenie.com; EU: events.eu.pagerduty.com, api.eu.opsgenie.com), or the webhook's URL", func(v *Values) any { return &v.PageURL }},
	{"PAGE_LINK_BASE", "", kURL, "where people open this agent's API; a page links {PAGE_LINK_BASE}/runs/{id}/report", func(v *Values) any { return &v.PageLinkBase }},
}

func lookupSpec(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

// Config is the effective configuration of one agent process: the typed
// Values, and where each came from (for /info).
type Config struct {
	Persona *persona.Persona
	Values
	// Warnings are settings that have no effect or look mistaken; the
	// agent logs them at start and /info lists them.
	Warnings []string
	// Unknown are environment variables with the agent's prefixes that are
	// not settings (CheckEnviron).
	Unknown []settings.Unknown

	settings map[string]Setting
}

// Error is a configuration error; its message names the variable and where
// the bad value came from.
type Error struct {
	Var, Where, Msg string
}

func (e *Error) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("%s (%s): %s", e.Var, e.Where, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Var, e.Msg)
}

// Load resolves the configuration. getenv is os.Getenv in production;
// loadPersona loads a persona by name or slug (from PERSONA_DIR or the
// embedded files).
func Load(getenv func(string) string, loadPersona func(dir, name string) (*persona.Persona, error)) (*Config, error) {
	name := strings.TrimSpace(getenv("AGENT_PERSONA"))
	if name == "" {
		return nil, &Error{Var: "AGENT_PERSONA", Msg: "is empty; set it to one of " + personaChoices()}
	}
	if _, ok := persona.Lookup(name); !ok {
		return nil, &Error{Var: "AGENT_PERSONA", Msg: fmt.Sprintf("unknown persona %q; valid: %s", name, personaChoices())}
	}
	p, err := loadPersona(strings.TrimSpace(getenv("PERSONA_DIR")), name)
	if err != nil {
		return nil, fmt.Errorf("loading persona %s: %w", name, err)
	}
	c := &Config{Persona: p, settings: map[string]Setting{}}
	for _, s := range specs {
		c.settings[s.name] = Setting{Value: s.def, Source: SourceDefault}
	}
	for _, ev := range p.Env {
		if ev.Key == "AGENT_PERSONA" {
			return nil, &Error{Var: ev.Key, Where: fmt.Sprintf("%s:%d", ev.File, ev.Line), Msg: "the persona is chosen by the environment, not by agent.env"}
		}
		if ev.Key == "AUTH_DISABLED" {
			return nil, &Error{Var: ev.Key, Where: fmt.Sprintf("%s:%d", ev.File, ev.Line), Msg: "only the environment may turn authentication off, not agent.env"}
		}
		if _, ok := lookupSpec(ev.Key); !ok {
			return nil, &Error{Var: ev.Key, Where: fmt.Sprintf("%s:%d", ev.File, ev.Line), Msg: "unknown setting"}
		}
		c.settings[ev.Key] = Setting{Value: ev.Value, Source: SourcePersona, Where: fmt.Sprintf("%s:%d", ev.File, ev.Line)}
	}
	for _, s := range specs {
		if v, ok := lookupEnv(getenv, s.name); ok {
			c.settings[s.name] = Setting{Value: v, Source: SourceEnv}
		}
	}
	c.settings["AGENT_PERSONA"] = Setting{Value: p.Slug, Source: SourceEnv}
	// AGENT_MODEL defaults to none without an endpoint.
	if m := c.settings["AGENT_MODEL"]; m.Source == SourceDefault || m.Value == "" {
		if c.settings["LLM_BASE_URL"].Value == "" {
			c.settings["AGENT_MODEL"] = Setting{Value: "none", Source: m.Source}
		}
	}
	if err := c.parse(); err != nil {
		return nil, err
	}
	if err := c.coherence(); err != nil {
		return nil, err
	}
	return c, nil
}

// lookupEnv treats an empty variable as unset: Kubernetes manifests often
// carry `value: ""` for optional settings.
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func personaChoices() string {
	var out []string
	for _, i := range persona.All {
		out = append(out, i.Name+" ("+i.Slug+")")
	}
	return strings.Join(out, ", ")
}

// Fail returns the configuration error for a setting whose value the
// caller found wrong, naming where the value came from.
func (c *Config) Fail(name, msg string) error { return c.fail(name, msg) }

func (c *Config) fail(name, msg string) error {
	s := c.settings[name]
	where := s.Where
	if where == "" && s.Source == SourceEnv {
		where = "environment"
	}
	return &Error{Var: name, Where: where, Msg: msg}
}

// parse fills Values from the settings, refusing any malformed value with
// the variable's name and where the value came from.
func (c *Config) parse() error {
	for _, s := range specs {
		v := strings.TrimSpace(c.settings[s.name].Value)
		if err := parseInto(s, v, s.field(&c.Values)); err != "" {
			return c.fail(s.name, err)
		}
	}
	for _, m := range []struct {
		name     string
		val, min int
		why      string
	}{
		{"AGENT_MAX_ITERATIONS", c.MaxIterations, 1, ""},
		{"AGENT_CONTEXT_TOKENS", c.ContextTokens, 4000, " (a system prompt, the tool schemas and one tool output)"},
		{"AGENT_MAX_TOOL_CALLS_PER_TURN", c.MaxCallsPerTurn, 1, ""},
		{"AGENT_MAX_TOOL_CALLS_PER_RUN", c.MaxCallsPerRun, 1, ""},
		{"AGENT_MAX_REPLY_CHARS", c.MaxReplyChars, 1000, ""},
		{"AGENT_MAX_ANSWER_CHARS", c.MaxAnswerChars, 1000, ""},
	} {
		if m.val < m.min {
			return c.fail(m.name, fmt.Sprintf("must be at least %d%s", m.min, m.why))
		}
	}
	if err := c.completionCap(); err != nil {
		return err
	}
	if d, r := c.TokenBudget, c.RunTokenBudget; d > 0 && r > d {
		return c.fail("AGENT_RUN_TOKEN_BUDGET", fmt.Sprintf("%d is more than AGENT_TOKEN_BUDGET (%d), the whole day's: lower one or raise the other", r, d))
	}
	if c.MaxConcurrentRuns < 1 {
		return c.fail("AGENT_MAX_CONCURRENT_RUNS", "must be at least 1")
	}
	peers, err := c.parsePeers()
	if err != nil {
		return err
	}
	c.StaticPeers = peers
	if c.Retention, err = store.ParseRetention(c.RetentionText); err != nil {
		return c.fail("RETENTION", err.Error())
	}
	if f := c.GitOpsForge; f != "" && f != "github" && f != "local" {
		return c.fail("GITOPS_FORGE", fmt.Sprintf("%q is not github or local", f))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c.fail("LOG_LEVEL", fmt.Sprintf("%q is not debug, info, warn or error", c.LogLevel))
	}
	return nil
}

// parseInto parses v (already trimmed) as s's kind into dst; it returns
// what is wrong with v, or "". An empty value leaves the zero value.
func parseInto(s spec, v string, dst any) string {
	if v == "" {
		return ""
	}
	switch s.kind {
	case kInt:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Sprintf("%q is not a non-negative whole number", v)
		}
		*dst.(*int) = n
	case kFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Sprintf("%q is not a number", v)
		}
		*dst.(*float64) = f
	case kBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Sprintf("%q is not true or false", v)
		}
		*dst.(*bool) = b
	case kDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Sprintf("%q is not a duration (e.g. 400s, 45m)", v)
		}
		if d <= 0 {
			return fmt.Sprintf("%q must be positive", v)
		}
		*dst.(*time.Duration) = d
	case kURL:
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("%q is not an http(s) URL", redact.URL(v))
		}
		*dst.(*string) = v
	case kList:
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*dst.(*[]string) = out
	default: // kString, kSecret
		*dst.(*string) = v
	}
	return ""
}

// Deterministic reports whether the agent runs without a model.
func (c *Config) Deterministic() bool {
	return c.Model == "" || c.Model == "none" || c.LLMBaseURL == ""
}

// parsePeers parses AGENT_PEERS (slug=url,…); persona names are accepted
// and resolved to slugs.
func (c *Config) parsePeers() (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range c.PeerList {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, c.fail("AGENT_PEERS", fmt.Sprintf("%q is not slug=url", kv))
		}
		info, found := persona.Lookup(strings.TrimSpace(k))
		if !found {
			return nil, c.fail("AGENT_PEERS", fmt.Sprintf("unknown agent %q; valid: %s", k, personaChoices()))
		}
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || u.Host == "" {
			return nil, c.fail("AGENT_PEERS", fmt.Sprintf("%q is not a URL", v))
		}
		out[info.Slug] = strings.TrimRight(strings.TrimSpace(v), "/")
	}
	return out, nil
}

// Settings returns every effective setting, secrets redacted, for /info.
func (c *Config) Settings() map[string]Setting {
	out := make(map[string]Setting, len(c.settings))
	for name, s := range c.settings {
		sp, _ := lookupSpec(name)
		switch {
		case sp.kind == kSecret && s.Value != "":
			s.Value = redactSecret(name, s.Value)
		default:
			// LLM_BASE_URL, GITHUB_API_URL, AGENT_PEERS…: userinfo and
			// secret query parameters go (docs/MANUAL.md, "Redaction").
			s.Value, _ = redact.String(s.Value)
		}
		out[name] = s
	}
	return out
}

// SecretValues are the values of the secret settings that are set: the
// app hands them to redact.Known, so that one without a recognisable shape
// is redacted wherever it is quoted (docs/MANUAL.md, "Redaction").
func (c *Config) SecretValues() []string {
	var out []string
	for name, s := range c.settings {
		if sp, _ := lookupSpec(name); sp.kind == kSecret && s.Value != "" {
			out = append(out, s.Value)
		}
	}
	return out
}

func redactSecret(name, v string) string {
	if name == "DATABASE_URL" || strings.HasSuffix(name, "_WEBHOOK_URL") {
		if u, err := url.Parse(v); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host + "/…(redacted)"
		}
	}
	return "(set, redacted)"
}

// Names lists every known setting, sorted (for documentation).
func Names() []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		out = append(out, s.name)
	}
	sort.Strings(out)
	return out
}

// Help returns the one-line help of a setting and its default.
func Help(name string) (help, def string) {
	s, _ := lookupSpec(name)
	return s.help, s.def
}

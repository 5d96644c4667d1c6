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
}

// specs lists every setting the agent reads. A variable not listed here is
// not read; an agent.env key not listed here is a start-up error.
var specs = []spec{
	{"AGENT_PERSONA", "", kString, "noor|sol|vera|dax|ada or the slug"},
	{"AGENT_TOOLS", "", kList, "comma list of tools (built-ins are always added)"},
	{"AGENT_MODEL", "", kString, "model name; none = deterministic playbooks (default when LLM_BASE_URL is empty)"},
	{"AGENT_MAX_ITERATIONS", "15", kInt, "model calls before the ceiling ends the run cleanly"},
	{"AGENT_TEMPERATURE", "0", kFloat, "sampling temperature"},
	{"AGENT_DISPLAY_NAME", "", kString, "persona display name in reports"},
	{"LLM_BASE_URL", "", kURL, "OpenAI-compatible endpoint, e.g. http://host:11434/v1"},
	{"LLM_API_KEY", "", kSecret, "API key for LLM_BASE_URL"},
	{"LLM_TIMEOUT", "400s", kDuration, "per model call"},
	{"LLM_FALLBACK_BASE_URL", "", kURL, "fallback endpoint, tried on timeout, connection error, 5xx, 429"},
	{"LLM_FALLBACK_MODEL", "", kString, "fallback model (default AGENT_MODEL)"},
	{"LLM_FALLBACK_API_KEY", "", kSecret, "API key for the fallback"},
	{"SYNTHESIS_TIMEOUT", "180s", kDuration, "per synthesis attempt"},
	{"RUN_TIMEOUT", "1200s", kDuration, "whole-run bound"},
	{"LISTEN_ADDR", ":8000", kString, "HTTP listen address"},
	{"PULSE_ENABLED", "false", kBool, "run the pulse timer"},
	{"PULSE_INTERVAL", "45m", kDuration, "sleep between pulse ticks"},
	{"PULSE_TIMEOUT", "", kDuration, "bound of one pulse run (default: half of PULSE_INTERVAL, at most RUN_TIMEOUT)"},
	{"AGENT_NAMESPACE", "kubecrew", kString, "namespace of the fleet (peer URLs)"},
	{"POD_NAME", "", kString, "this pod's name (downward API); in a cluster the pulse leader is then chosen by the Lease kubecrew-pulse-<slug>"},
	{"PEER_URL_TEMPLATE", "http://agent-{slug}.{namespace}.svc:8000", kString, "peer URL template"},
	{"AGENT_PEERS", "", kList, "static peers slug=url,… (wins over the template)"},
	{"MAX_SOCIAL_DEPTH", "5", kInt, "A2A depth ceiling"},
	{"A2A_CALL_TIMEOUT", "540s", kDuration, "blocking ask/delegate timeout"},
	{"DATABASE_URL", "", kSecret, "Postgres URL; empty = in-memory store"},
	{"RETENTION", "30d", kString, "runs with their traces, findings and the A2A log older than this are deleted (e.g. 30d, 720h; 0 keeps them)"},
	{"KUBECONFIG", "", kString, "kubeconfig path; empty = in-cluster"},
	{"KUBE_CONTEXT", "", kString, "kubeconfig context"},
	{"CONFIGMAP_VALUE_KEYS", "", kList, "ConfigMap keys whose values k8s_get_yaml shows (default: keys only)"},
	{"AUTH_TOKEN", "", kSecret, "bearer token every route but /health, /ready, /metrics and the agent card needs"},
	{"AUTH_READ_TOKEN", "", kSecret, "optional read-only bearer token: opens GET routes only (dashboards)"},
	{"PERSONA_DIR", "", kString, "directory overriding the embedded persona files (re-read each run)"},
	{"TOOL_OUTPUT_MAX_CHARS", "8000", kInt, "tool output budget (head 2/3, tail 1/3)"},
	{"MEMORY_MAX_CHARS", "4000", kInt, "MEMORY budget in the prompt"},
	{"LOG_LEVEL", "info", kString, "debug|info|warn|error"},
	{"READY_REQUIRE", "cluster,store,model", kList, "dependencies that must be usable for GET /ready to answer 200: cluster, store, model, gitops, or none"},
	{"GITOPS_FORGE", "", kString, "github|local"},
	{"GITOPS_REPO", "", kString, "owner/name, or a local repository path"},
	{"GITOPS_BRANCH", "main", kString, "base branch"},
	{"GITOPS_MAX_OPEN_PRS", "5", kInt, "open agent PR cap"},
	{"GITOPS_STALE_AFTER", "168h", kDuration, "agent PRs older than this are reported stale"},
	{"GITOPS_SETTLE_AFTER", "24h", kDuration, "a finding whose fix merged this recently gets no new PR"},
	{"GITHUB_TOKEN", "", kSecret, "GitHub token"},
	{"GITHUB_API_URL", "", kURL, "GitHub API base (GHE, tests)"},
	{"DISCORD_WEBHOOK_URL", "", kSecret, "Discord webhook"},
	{"SLACK_WEBHOOK_URL", "", kSecret, "Slack incoming webhook"},
	{"REPORT_WEBHOOK_URL", "", kSecret, "generic JSON webhook"},
	{"REPORT_COLOR", "", kString, "embed colour, e.g. 0x5865F2"},
}

func lookupSpec(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

// Config is the effective configuration of one agent process.
type Config struct {
	Persona  *persona.Persona
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
	if err := c.validate(); err != nil {
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

func (c *Config) validate() error {
	for _, s := range specs {
		v := c.settings[s.name].Value
		if v == "" {
			continue
		}
		switch s.kind {
		case kInt:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c.fail(s.name, fmt.Sprintf("%q is not a non-negative whole number", v))
			}
		case kFloat:
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return c.fail(s.name, fmt.Sprintf("%q is not a number", v))
			}
		case kBool:
			if _, err := strconv.ParseBool(v); err != nil {
				return c.fail(s.name, fmt.Sprintf("%q is not true or false", v))
			}
		case kDuration:
			d, err := time.ParseDuration(v)
			if err != nil {
				return c.fail(s.name, fmt.Sprintf("%q is not a duration (e.g. 400s, 45m)", v))
			}
			if d <= 0 {
				return c.fail(s.name, fmt.Sprintf("%q must be positive", v))
			}
		case kURL:
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return c.fail(s.name, fmt.Sprintf("%q is not an http(s) URL", redact.URL(v)))
			}
		}
	}
	if c.Int("AGENT_MAX_ITERATIONS") < 1 {
		return c.fail("AGENT_MAX_ITERATIONS", "must be at least 1")
	}
	if _, err := c.Peers(); err != nil {
		return err
	}
	if _, err := store.ParseRetention(c.String("RETENTION")); err != nil {
		return c.fail("RETENTION", err.Error())
	}
	if f := c.String("GITOPS_FORGE"); f != "" && f != "github" && f != "local" {
		return c.fail("GITOPS_FORGE", fmt.Sprintf("%q is not github or local", f))
	}
	switch c.String("LOG_LEVEL") {
	case "debug", "info", "warn", "error":
	default:
		return c.fail("LOG_LEVEL", fmt.Sprintf("%q is not debug, info, warn or error", c.String("LOG_LEVEL")))
	}
	return nil
}

// String returns a setting's value.
func (c *Config) String(name string) string { return c.settings[name].Value }

// Int returns an integer setting (validated at load).
func (c *Config) Int(name string) int { n, _ := strconv.Atoi(c.settings[name].Value); return n }

// Float returns a float setting.
func (c *Config) Float(name string) float64 {
	f, _ := strconv.ParseFloat(c.settings[name].Value, 64)
	return f
}

// Bool returns a boolean setting.
func (c *Config) Bool(name string) bool { b, _ := strconv.ParseBool(c.settings[name].Value); return b }

// Retention is RETENTION (validated at load; 0 keeps records forever).
func (c *Config) Retention() time.Duration {
	d, _ := store.ParseRetention(c.String("RETENTION"))
	return d
}

// Duration returns a duration setting; zero when empty.
func (c *Config) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(c.settings[name].Value)
	return d
}

// List returns a comma list setting, trimmed, without empties.
func (c *Config) List(name string) []string {
	var out []string
	for _, p := range strings.Split(c.settings[name].Value, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Deterministic reports whether the agent runs without a model.
func (c *Config) Deterministic() bool {
	m := c.String("AGENT_MODEL")
	return m == "" || m == "none" || c.String("LLM_BASE_URL") == ""
}

// Peers parses AGENT_PEERS (slug=url,…); persona names are accepted and
// resolved to slugs.
func (c *Config) Peers() (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range c.List("AGENT_PEERS") {
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
			// secret query parameters go (README.md, "Redaction").
			s.Value, _ = redact.String(s.Value)
		}
		out[name] = s
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

package config

import (
	"net/url"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Specs is every setting the core reads, with its default and meaning: the
// table --help prints and /info shows (a test keeps it equal to what Load
// reads).
var Specs = []settings.Spec{
	{Name: "LISTEN_ADDR", Default: DefaultListenAddr, Help: "HTTP listen address"},
	{Name: "DATABASE_URL", Help: "Postgres URL; empty = in-memory store (one replica only)"},
	{Name: "ROUTES_FILE", Help: "alert routing rules (YAML); empty = every alert to platform-sre"},
	{Name: "PEER_URL_TEMPLATE", Default: DefaultPeerURLTemplate, Help: "agent URL template ({slug}, {namespace})"},
	{Name: "AGENT_NAMESPACE", Default: DefaultNamespace, Help: "namespace of the fleet (peer URLs)"},
	{Name: "AGENT_PEERS", Help: "static agent URLs slug=url,… (win over the template); cluster/slug=url for another cluster's agents"},
	{Name: "CLUSTER_LABEL", Default: "cluster", Help: "the alert label naming its cluster: routes it to that cluster's agents (AGENT_PEERS cluster/slug=url)"},
	{Name: "DEFAULT_CLUSTER", Help: "the cluster the agents of plain AGENT_PEERS entries and the template serve: alerts without a cluster label, or with this one"},
	{Name: "AGENT_CALL_TIMEOUT", Default: DefaultCallTimeout.String(), Help: "bound of one investigation's call to an agent; must be below ALERT_COOLDOWN"},
	{Name: "ALERT_COOLDOWN", Default: DefaultCooldown.String(), Help: "an alert investigated this recently is not investigated again"},
	{Name: "DECISION_FLUSH_INTERVAL", Default: store.DefaultFlushInterval.String(), Help: "on Postgres, repeats of a known alert (deduped, cooldown, ignored again) are counted in memory and written this often (at most 1m; 0 writes each at once); kill -9 loses at most this much of the counters, never a state change"},
	{Name: "RETENTION", Default: "30d", Help: "decisions, investigations and idle alert states older than this are deleted (0 keeps them)"},
	{Name: "AUTH_TOKEN", Help: "bearer token every route but /health, /ready and /metrics needs; required unless AUTH_DISABLED=true"},
	{Name: "AUTH_READ_TOKEN", Help: "optional read-only bearer token: opens GET routes only (dashboards); needs AUTH_TOKEN"},
	{Name: "AUTH_DISABLED", Default: "false", Help: "true: start without AUTH_TOKEN, every route open (a laptop only; warned at start, shown in /info and on the dashboard; runs started through the API are never interactive)"},
	{Name: "LOG_LEVEL", Default: "info", Help: "debug|info|warn|error"},
	{Name: "ALERT_WEBHOOK_MAX_BYTES", Default: DefaultWebhookMaxBytes, Help: "largest Alertmanager webhook body taken (bytes, or Ki/Mi); larger is 413. Match Alertmanager's max_alerts to it (docs/MANUAL.md, Storms)"},
	{Name: "CORE_REPLICAS", Default: "1", Help: "core processes sharing DATABASE_URL; above 1 an unusable database makes /ready fail"},
	{Name: "READY_REQUIRE", Default: DepStore, Help: "dependencies /ready requires: store, or none"},
	{Name: "DISCORD_WEBHOOK_URL", Help: "Discord webhook: each finished investigation is posted once (routes' notify chooses the chats)"},
	{Name: "DISCORD_FORUM", Default: "false", Help: "true when DISCORD_WEBHOOK_URL is a forum channel's: each investigation opens a thread, its resolution follows up in it"},
	{Name: "SLACK_WEBHOOK_URL", Help: "Slack incoming webhook for investigation posts"},
	{Name: "REPORT_WEBHOOK_URL", Help: "generic JSON webhook for investigation posts (carries a thread key for follow-ups)"},
	{Name: "NOTIFY_SETTLE", Default: DefaultNotifySettle.String(), Help: "how long a post waits for the investigation's chain (the PR, the review) to finish"},
	{Name: "CORE_PUBLIC_URL", Help: "the core's URL as people reach it; posts then link the investigation's report"},
	{Name: "PAGE_TARGET", Help: "pagerduty|opsgenie|webhook: where a human is paged when an alert investigation ends with a critical finding no agent may fix (empty: nobody is paged)"},
	{Name: "PAGE_KEY", Help: "PagerDuty Events API v2 routing key, or Opsgenie API integration key"},
	{Name: "PAGE_URL", Help: "the incident API's base URL (default https://events.pagerduty.com, https://api.opsgenie.com), or the webhook's URL"},
}

// secrets are shown redacted by /info.
var secrets = map[string]bool{"DATABASE_URL": true, "AUTH_TOKEN": true, "AUTH_READ_TOKEN": true,
	"DISCORD_WEBHOOK_URL": true, "SLACK_WEBHOOK_URL": true, "REPORT_WEBHOOK_URL": true, "PAGE_KEY": true, "PAGE_URL": true}

// Prefixes are those of the core's settings distinctive enough that an
// unknown variable carrying one is a typo worth a warning.
var Prefixes = []string{"ALERT_", "DECISION_", "CORE_", "ROUTES_", "AGENT_", "AUTH_", "PEER_", "READY_", "NOTIFY_", "PAGE_", "CLUSTER_"}

// agentSettings are the agents' settings with the core's prefixes: an
// environment file given to both binaries carries them.
var agentSettings = []string{"AGENT_PERSONA", "AGENT_TOOLS", "AGENT_MODEL", "AGENT_MAX_ITERATIONS", "AGENT_MAX_CONCURRENT_RUNS", "AGENT_TEMPERATURE", "AGENT_DISPLAY_NAME"}

// Setting is one effective value for /info: where it came from
// (env|default), secrets redacted.
type Setting struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// effective is every setting's value as getenv gives it, else its default.
func effective(getenv func(string) string) map[string]Setting {
	out := make(map[string]Setting, len(Specs))
	for _, s := range Specs {
		v, src := strings.TrimSpace(getenv(s.Name)), "env"
		if v == "" {
			v, src = s.Default, "default"
		}
		if secrets[s.Name] && v != "" {
			v = redactSecret(v)
		} else {
			// AGENT_PEERS, PEER_URL_TEMPLATE…: userinfo and secret query
			// parameters go (docs/MANUAL.md, "Redaction").
			v, _ = redact.String(v)
		}
		out[s.Name] = Setting{Value: v, Source: src}
	}
	return out
}

func redactSecret(v string) string {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Scheme + "://" + u.Host + "/…(redacted)"
	}
	return "(set, redacted)"
}

// CheckEnviron records the variables of environ (os.Environ) that look
// like the core's settings but are not, each with a "did you mean".
func (c *Config) CheckEnviron(environ []string) {
	c.Unknown = settings.Unknowns(environ, Prefixes, Specs, agentSettings...)
	for _, u := range c.Unknown {
		c.Warnings = append(c.Warnings, u.String()+": ignored")
	}
}

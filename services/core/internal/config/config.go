// Package config reads the core's environment (docs/MANUAL.md, "The core"; every
// setting is in Specs) and refuses a configuration that cannot work: malformed
// durations, an agent call timeout that is not below the alert cooldown,
// unknown peers.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/readiness"
	"github.com/kubecrew/kubecrew/pkg/settings"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Defaults.
const (
	DefaultListenAddr      = ":8080"
	DefaultPeerURLTemplate = "http://agent-{slug}.{namespace}.svc:8000"
	DefaultNamespace       = "kubecrew"
	DefaultCallTimeout     = 600 * time.Second
	DefaultCooldown        = 30 * time.Minute
	DefaultNotifySettle    = 2 * time.Minute
	// DefaultWebhookMaxBytes is webhook.MaxBodyBytes as the setting reads.
	DefaultWebhookMaxBytes = "32Mi"
	// ModelCallCeiling is the floor of one model call through the gateway:
	// a caller that hangs up sooner throws away finished work.
	ModelCallCeiling = 400 * time.Second
)

// Config is the core's configuration.
type Config struct {
	ListenAddr      string
	DatabaseURL     string
	RoutesFile      string
	PeerURLTemplate string
	Namespace       string
	// Peers maps every known agent slug to its base URL (AGENT_PEERS wins
	// over the template).
	Peers map[string]string
	// Clusters lists the clusters other than the default one that have
	// agents (AGENT_PEERS cluster/slug=url entries; docs/MANUAL.md, "Many
	// clusters"); their peers are keyed "cluster/slug".
	Clusters []string
	// ClusterLabel is the alert label naming its cluster (CLUSTER_LABEL);
	// DefaultCluster the name of the cluster the plain peers serve.
	ClusterLabel   string
	DefaultCluster string
	CallTimeout    time.Duration
	Cooldown       time.Duration
	// Retention is how long decisions, investigations and idle alert
	// states are kept (RETENTION; 0 keeps them forever).
	Retention time.Duration
	// FlushInterval bounds how long repeat counters wait in memory
	// (docs/MANUAL.md, "Repeats are counted, not written"); 0 writes each.
	FlushInterval time.Duration
	AuthToken     string
	// AuthReadToken, when set, opens the GET routes only (dashboards).
	AuthReadToken string
	// AuthDisabled (AUTH_DISABLED=true) is the only way to start without
	// AUTH_TOKEN (docs/MANUAL.md, "Authentication").
	AuthDisabled bool
	LogLevel     zapcore.Level
	// Replicas is how many core processes share DATABASE_URL
	// (CORE_REPLICAS): with more than one, a core serving from memory
	// would dedupe alone, so it is not ready.
	Replicas int
	// WebhookMaxBytes caps a webhook body (ALERT_WEBHOOK_MAX_BYTES).
	WebhookMaxBytes int64
	// ReadyRequire lists the dependencies /ready requires (READY_REQUIRE:
	// store, or none).
	ReadyRequire map[string]bool
	// Chat webhooks the investigations are posted to (docs/MANUAL.md, "The
	// core tells people"), how long a post waits for the chain to settle,
	// and the core's public URL for links.
	DiscordWebhookURL string
	DiscordForum      bool
	SlackWebhookURL   string
	ReportWebhookURL  string
	NotifySettle      time.Duration
	PublicURL         string
	// Paging a human (docs/MANUAL.md, "The action envelope": verify, then
	// escalate): PAGE_TARGET, PAGE_KEY, PAGE_URL; the page links the
	// investigation's report under CORE_PUBLIC_URL.
	Page PageConfig

	// Settings are the effective values for /info, secrets redacted.
	Settings map[string]Setting
	// SecretValues are the secret settings' values that are set: the app
	// hands them to redact.Known (docs/MANUAL.md, "Redaction").
	SecretValues []string
	// Unknown are environment variables with the core's prefixes that are
	// not settings (CheckEnviron); Warnings say so, for the log and /info.
	Unknown  []settings.Unknown
	Warnings []string
}

// Dependencies the core's /ready reports.
const DepStore = "store"

// Load reads the configuration through getenv (os.Getenv in main, a map in
// tests). Every error names the variable at fault.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		ListenAddr:      or(getenv("LISTEN_ADDR"), DefaultListenAddr),
		DatabaseURL:     strings.TrimSpace(getenv("DATABASE_URL")),
		RoutesFile:      strings.TrimSpace(getenv("ROUTES_FILE")),
		PeerURLTemplate: or(getenv("PEER_URL_TEMPLATE"), DefaultPeerURLTemplate),
		Namespace:       or(getenv("AGENT_NAMESPACE"), DefaultNamespace),
		AuthToken:       strings.TrimSpace(getenv("AUTH_TOKEN")),
		AuthReadToken:   strings.TrimSpace(getenv("AUTH_READ_TOKEN")),

		DiscordWebhookURL: strings.TrimSpace(getenv("DISCORD_WEBHOOK_URL")),
		SlackWebhookURL:   strings.TrimSpace(getenv("SLACK_WEBHOOK_URL")),
		ReportWebhookURL:  strings.TrimSpace(getenv("REPORT_WEBHOOK_URL")),
		PublicURL:         strings.TrimRight(strings.TrimSpace(getenv("CORE_PUBLIC_URL")), "/"),
	}
	var err error
	if c.CallTimeout, err = duration(getenv, "AGENT_CALL_TIMEOUT", DefaultCallTimeout); err != nil {
		return Config{}, err
	}
	if c.Cooldown, err = duration(getenv, "ALERT_COOLDOWN", DefaultCooldown); err != nil {
		return Config{}, err
	}
	if err := c.auth(getenv("AUTH_DISABLED")); err != nil {
		return Config{}, err
	}
	if v := strings.TrimSpace(getenv("DISCORD_FORUM")); v != "" {
		if c.DiscordForum, err = strconv.ParseBool(v); err != nil {
			return Config{}, fmt.Errorf("DISCORD_FORUM: %q is not true or false", v)
		}
	}
	if c.NotifySettle, err = duration(getenv, "NOTIFY_SETTLE", DefaultNotifySettle); err != nil {
		return Config{}, err
	}
	if c.PublicURL != "" {
		if err := checkURL(c.PublicURL); err != nil {
			return Config{}, fmt.Errorf("CORE_PUBLIC_URL: %w", err)
		}
	}
	if c.FlushInterval, err = flushInterval(getenv("DECISION_FLUSH_INTERVAL")); err != nil {
		return Config{}, err
	}
	if c.Retention, err = store.ParseRetention(getenv("RETENTION")); err != nil {
		return Config{}, err
	}
	if c.CallTimeout >= c.Cooldown {
		return Config{}, fmt.Errorf("AGENT_CALL_TIMEOUT (%s) must be less than ALERT_COOLDOWN (%s): otherwise an alert becomes eligible for a second investigation while the first is still running", c.CallTimeout, c.Cooldown)
	}
	if c.WebhookMaxBytes, err = byteSize(or(getenv("ALERT_WEBHOOK_MAX_BYTES"), DefaultWebhookMaxBytes)); err != nil {
		return Config{}, fmt.Errorf("ALERT_WEBHOOK_MAX_BYTES: %w", err)
	}
	c.Replicas = 1
	if v := strings.TrimSpace(getenv("CORE_REPLICAS")); v != "" {
		if c.Replicas, err = strconv.Atoi(v); err != nil || c.Replicas < 1 {
			return Config{}, fmt.Errorf("CORE_REPLICAS: %q is not a whole number of at least 1", v)
		}
	}
	if c.ReadyRequire, err = readiness.ParseRequire(or(getenv("READY_REQUIRE"), DepStore), []string{DepStore}); err != nil {
		return Config{}, fmt.Errorf("READY_REQUIRE: %w", err)
	}
	if c.LogLevel, err = logLevel(getenv("LOG_LEVEL")); err != nil {
		return Config{}, err
	}
	if !strings.Contains(c.PeerURLTemplate, "{slug}") {
		return Config{}, fmt.Errorf("PEER_URL_TEMPLATE %q: must contain {slug}", c.PeerURLTemplate)
	}
	c.Peers = make(map[string]string, len(Fleet))
	for _, a := range Fleet {
		u := strings.ReplaceAll(c.PeerURLTemplate, "{slug}", a.Slug)
		u = strings.ReplaceAll(u, "{namespace}", c.Namespace)
		if err := checkURL(u); err != nil {
			return Config{}, fmt.Errorf("PEER_URL_TEMPLATE %q: %w", c.PeerURLTemplate, err)
		}
		c.Peers[a.Slug] = strings.TrimRight(u, "/")
	}
	static, err := ParsePeers(getenv("AGENT_PEERS"))
	if err != nil {
		return Config{}, fmt.Errorf("AGENT_PEERS: %w", err)
	}
	for slug, u := range static {
		c.Peers[slug] = u
	}
	c.ClusterLabel = or(strings.TrimSpace(getenv("CLUSTER_LABEL")), "cluster")
	if !validLabelName(c.ClusterLabel) {
		return Config{}, fmt.Errorf("CLUSTER_LABEL %q: not a Prometheus label name", c.ClusterLabel)
	}
	c.DefaultCluster = strings.TrimSpace(getenv("DEFAULT_CLUSTER"))
	c.Clusters = clustersOf(static)
	if slices.Contains(c.Clusters, c.DefaultCluster) {
		return Config{}, fmt.Errorf("AGENT_PEERS: cluster %q is DEFAULT_CLUSTER: list its agents as plain slug=url", c.DefaultCluster)
	}
	c.Page = PageConfig{Target: strings.TrimSpace(getenv("PAGE_TARGET")), Key: strings.TrimSpace(getenv("PAGE_KEY")),
		URL: strings.TrimSpace(getenv("PAGE_URL"))}
	if _, err := pager.New(pager.Config{Target: c.Page.Target, Key: c.Page.Key, URL: c.Page.URL}); err != nil && !errors.Is(err, pager.ErrNoPager) {
		return Config{}, err
	}
	c.Settings = effective(getenv)
	for name := range secrets {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			c.SecretValues = append(c.SecretValues, v)
		}
	}
	return c, nil
}

// AuthDisabledWarning is logged at start, listed in /info and shown on the
// dashboard when AUTH_DISABLED=true. Worded so that the log redactor leaves
// it whole (no "NAME: value" or "NAME=value" shape after a secret's name).
const AuthDisabledWarning = "AUTH_DISABLED=true: authentication is off, every route is open to anyone who reaches the port, and runs started through the API are never interactive; set AUTH_TOKEN outside a laptop"

// auth closes the door by default (docs/MANUAL.md, "Authentication"): no
// AUTH_TOKEN is a start-up error unless AUTH_DISABLED=true says so.
func (c *Config) auth(disabled string) error {
	if v := strings.TrimSpace(disabled); v != "" {
		var err error
		if c.AuthDisabled, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("AUTH_DISABLED: %q is not true or false", v)
		}
	}
	if setting, problem := httpauth.RequireToken(c.AuthToken, c.AuthReadToken, c.AuthDisabled); setting != "" {
		return errors.New(setting + " " + problem)
	}
	if c.AuthDisabled {
		c.Warnings = append(c.Warnings, AuthDisabledWarning)
	}
	return nil
}

// PageConfig is where the core pages a human.
type PageConfig struct {
	Target, Key, URL string
}

// clustersOf lists the clusters of "cluster/slug" peers, sorted.
func clustersOf(peers map[string]string) []string {
	var out []string
	for k := range peers {
		if c, _, ok := strings.Cut(k, "/"); ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func validLabelName(s string) bool {
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// ParsePeers parses "slug=url,…" and "cluster/slug=url" (another
// cluster's agent). Persona names are accepted for slugs.
func ParsePeers(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, u, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q: want slug=url or cluster/slug=url", item)
		}
		cluster, name, inCluster := strings.Cut(name, "/")
		if !inCluster {
			name, cluster = cluster, ""
		}
		cluster = strings.TrimSpace(cluster)
		if inCluster && (cluster == "" || !api.PlainText(cluster) || strings.ContainsAny(cluster, " ,=")) {
			return nil, fmt.Errorf("entry %q: cluster name %q is empty or holds a space, comma, = or control character", item, cluster)
		}
		slug, ok := ResolveAgent(name)
		if !ok {
			return nil, fmt.Errorf("entry %q: unknown agent %q (known: %s)", item, strings.TrimSpace(name), knownAgents())
		}
		if inCluster {
			slug = cluster + "/" + slug
		}
		u = strings.TrimSpace(u)
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("entry %q: %w", item, err)
		}
		if _, dup := out[slug]; dup {
			return nil, fmt.Errorf("agent %q listed twice", slug)
		}
		out[slug] = strings.TrimRight(u, "/")
	}
	return out, nil
}

func knownAgents() string {
	names := make([]string, 0, len(Fleet))
	for _, a := range Fleet {
		names = append(names, a.Slug+" ("+a.Persona+")")
	}
	return strings.Join(names, ", ")
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad url %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad url %q: want http(s)://host[:port]", s)
	}
	return nil
}

func duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: malformed duration %q (want e.g. 600s, 30m)", name, v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: duration %q must be positive", name, v)
	}
	return d, nil
}

func logLevel(v string) (zapcore.Level, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return zapcore.InfoLevel, nil
	}
	var l zapcore.Level
	if err := l.UnmarshalText([]byte(strings.ToLower(v))); err != nil {
		return 0, fmt.Errorf("LOG_LEVEL: unknown level %q (want debug, info, warn or error)", v)
	}
	return l, nil
}

func or(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

// MaxFlushInterval bounds DECISION_FLUSH_INTERVAL: what a kill -9 may lose
// of the repeat counters.
const MaxFlushInterval = time.Minute

func flushInterval(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return store.DefaultFlushInterval, nil
	}
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("DECISION_FLUSH_INTERVAL: malformed duration %q (want e.g. 2s, 500ms; 0 writes every decision at once)", v)
	}
	if d < 0 || d > MaxFlushInterval {
		return 0, fmt.Errorf("DECISION_FLUSH_INTERVAL: %s is outside 0…%s", d, MaxFlushInterval)
	}
	return d, nil
}

// byteSize reads a size in bytes, or in Ki or Mi (1024-based), of at
// least 64Ki: an Alertmanager webhook of one alert fits.
func byteSize(v string) (int64, error) {
	num, mult := strings.TrimSpace(v), int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20} {
		if n, ok := strings.CutSuffix(num, suffix); ok {
			num, mult = n, m
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > (1<<40)/mult || n*mult < 64<<10 {
		return 0, fmt.Errorf("%q is not a size of at least 64Ki (bytes, or a number with Ki or Mi)", v)
	}
	return n * mult, nil
}

package config

import (
	"strings"
	"testing"
	"time"
)

// env is m as an environment, with AUTH_TOKEN set unless m configures
// authentication itself (TestAuthRequired).
func env(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k != "AUTH_TOKEN" || m["AUTH_DISABLED"] != "" || m["AUTH_READ_TOKEN"] != "" {
			return v
		}
		return "test-token"
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != ":8080" || c.CallTimeout != 600*time.Second || c.Cooldown != 30*time.Minute || c.Retention != 30*24*time.Hour || c.AuthToken != "test-token" || c.DatabaseURL != "" {
		t.Fatalf("defaults: %+v", c)
	}
	if got := c.Peers["platform-sre"]; got != "http://agent-platform-sre.kubecrew.svc:8000" {
		t.Fatalf("template peer: %s", got)
	}
	if len(c.Peers) != 5 {
		t.Fatalf("peers: %v", c.Peers)
	}
}

func TestLoadPeers(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"AGENT_NAMESPACE":   "sre",
		"PEER_URL_TEMPLATE": "http://{slug}.{namespace}:9000/",
		"AGENT_PEERS":       "noor=http://127.0.0.1:8001/, agent-k8s-engineer=https://sol.example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"platform-sre": "http://127.0.0.1:8001", "k8s-engineer": "https://sol.example",
		"code-reviewer": "http://code-reviewer.sre:9000", "cicd-engineer": "http://cicd-engineer.sre:9000", "backend-architect": "http://backend-architect.sre:9000",
	}
	for k, v := range want {
		if c.Peers[k] != v {
			t.Errorf("peer %s = %q, want %q", k, c.Peers[k], v)
		}
	}
	if len(c.Clusters) != 0 || c.ClusterLabel != "cluster" {
		t.Errorf("one cluster: clusters %v, label %q", c.Clusters, c.ClusterLabel)
	}
	c, err = Load(env(map[string]string{"AGENT_PEERS": "noor=http://a, eu-west/noor=http://eu:8000/, ap/platform-sre=http://ap", "CLUSTER_LABEL": "k8s_cluster"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Peers["eu-west/platform-sre"] != "http://eu:8000" || c.Peers["ap/platform-sre"] != "http://ap" || c.Peers["platform-sre"] != "http://a" ||
		strings.Join(c.Clusters, ",") != "ap,eu-west" || c.ClusterLabel != "k8s_cluster" {
		t.Errorf("clusters %v, label %q, peers %v", c.Clusters, c.ClusterLabel, c.Peers)
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENT_CALL_TIMEOUT": "ten minutes"}, `AGENT_CALL_TIMEOUT: malformed duration "ten minutes"`},
		{map[string]string{"AGENT_CALL_TIMEOUT": "600"}, `AGENT_CALL_TIMEOUT: malformed duration "600"`},
		{map[string]string{"ALERT_COOLDOWN": "-5m"}, `ALERT_COOLDOWN: duration "-5m" must be positive`},
		{map[string]string{"AGENT_CALL_TIMEOUT": "30m"}, "AGENT_CALL_TIMEOUT (30m0s) must be less than ALERT_COOLDOWN (30m0s)"},
		{map[string]string{"ALERT_COOLDOWN": "5m"}, "AGENT_CALL_TIMEOUT (10m0s) must be less than ALERT_COOLDOWN (5m0s)"},
		{map[string]string{"LOG_LEVEL": "loud"}, `LOG_LEVEL: unknown level "loud"`},
		{map[string]string{"AGENT_PEERS": "bob=http://x"}, `AGENT_PEERS: entry "bob=http://x": unknown agent "bob"`},
		{map[string]string{"AGENT_PEERS": "noor"}, `AGENT_PEERS: entry "noor": want slug=url`},
		{map[string]string{"AGENT_PEERS": "noor=ftp://x"}, `AGENT_PEERS: entry "noor=ftp://x": bad url`},
		{map[string]string{"AGENT_PEERS": "noor=http://a,platform-sre=http://b"}, `AGENT_PEERS: agent "platform-sre" listed twice`},
		{map[string]string{"AGENT_PEERS": "/noor=http://a"}, `AGENT_PEERS: entry "/noor=http://a": cluster name "" is empty`},
		{map[string]string{"AGENT_PEERS": "eu/bob=http://a"}, `AGENT_PEERS: entry "eu/bob=http://a": unknown agent "bob"`},
		{map[string]string{"AGENT_PEERS": "eu/noor=http://a,eu/platform-sre=http://b"}, `AGENT_PEERS: agent "eu/platform-sre" listed twice`},
		{map[string]string{"AGENT_PEERS": "eu/noor=http://a", "DEFAULT_CLUSTER": "eu"}, `AGENT_PEERS: cluster "eu" is DEFAULT_CLUSTER`},
		{map[string]string{"CLUSTER_LABEL": "k8s-cluster"}, `CLUSTER_LABEL "k8s-cluster": not a Prometheus label name`},
		{map[string]string{"PEER_URL_TEMPLATE": "http://agent:8000"}, "PEER_URL_TEMPLATE \"http://agent:8000\": must contain {slug}"},
		{map[string]string{"PEER_URL_TEMPLATE": "{slug}"}, "PEER_URL_TEMPLATE \"{slug}\": bad url"},
		{map[string]string{"DECISION_FLUSH_INTERVAL": "soon"}, `DECISION_FLUSH_INTERVAL: malformed duration "soon"`},
		{map[string]string{"DECISION_FLUSH_INTERVAL": "5m"}, "DECISION_FLUSH_INTERVAL: 5m0s is outside 0…1m0s"},
		{map[string]string{"DECISION_FLUSH_INTERVAL": "-1s"}, "DECISION_FLUSH_INTERVAL: -1s is outside 0…1m0s"},
		{map[string]string{"RETENTION": "a month"}, `RETENTION: malformed "a month" (want e.g. 30d, 720h, or 0 to keep forever)`},
		{map[string]string{"RETENTION": "-3d"}, `RETENTION: malformed "-3d"`},
		{map[string]string{"RETENTION": "1h"}, "RETENTION (1h) must be at least 48h0m0s, or 0 to keep forever"},
	}
	for _, tt := range tests {
		_, err := Load(env(tt.env))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Load(%v) = %v, want %q", tt.env, err, tt.want)
		}
	}
}

func TestResolveAgent(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"noor": "platform-sre", " Sol ": "k8s-engineer", "agent-code-reviewer": "code-reviewer", "ADA": "backend-architect", "dax": "cicd-engineer"} {
		if got, ok := ResolveAgent(in); !ok || got != want {
			t.Errorf("ResolveAgent(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "bob", "agent-", "platform"} {
		if got, ok := ResolveAgent(in); ok {
			t.Errorf("ResolveAgent(%q) = %q, want unknown", in, got)
		}
	}
}

func TestLoadRetention(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 30 * 24 * time.Hour, "7d": 7 * 24 * time.Hour, "2160h": 90 * 24 * time.Hour, "0": 0, "off": 0} {
		c, err := Load(env(map[string]string{"RETENTION": v}))
		if err != nil || c.Retention != want {
			t.Errorf("RETENTION=%q: %v, %v; want %v", v, c.Retention, err, want)
		}
	}
}

func TestLoadFlushInterval(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 2 * time.Second, "0": 0, "500ms": 500 * time.Millisecond, "1m": time.Minute} {
		c, err := Load(env(map[string]string{"DECISION_FLUSH_INTERVAL": v}))
		if err != nil || c.FlushInterval != want {
			t.Errorf("DECISION_FLUSH_INTERVAL=%q: %v, %v; want %v", v, c.FlushInterval, err, want)
		}
	}
}

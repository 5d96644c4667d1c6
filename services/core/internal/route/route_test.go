package route

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func resolve(name string) (string, bool) {
	m := map[string]string{
		"noor": "platform-sre", "platform-sre": "platform-sre",
		"sol": "k8s-engineer", "k8s-engineer": "k8s-engineer",
		"dax": "cicd-engineer", "cicd-engineer": "cicd-engineer",
		"ada": "backend-architect", "backend-architect": "backend-architect",
	}
	s, ok := m[strings.ToLower(name)]
	return s, ok
}

func opts() Options {
	return Options{
		DefaultCooldown: 30 * time.Minute,
		CallTimeout:     10 * time.Minute,
		Resolve:         resolve,
		Forbidden:       map[string]string{"k8s-engineer": "alerts go to the triager first"},
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Parse("routes.yaml", data, opts())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   Target
		reason string
	}{
		{"default route", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod"},
			Target{Route: "default", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1}, ""},
		{"ignored namespace", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "fixtures"},
			Target{Route: "ignore", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1, Ignored: true}, "ignore rule fixtures (routes.yaml:8) matched namespace=~\"fixtures|e2e\""},
		{"namespace list is exact", map[string]string{"alertname": "X", "namespace": "fixtures2"},
			Target{Route: "default", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1}, ""},
		{"ignored alertname", map[string]string{"alertname": "Watchdog"},
			Target{Route: "ignore", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1, Ignored: true}, "ignore rule #2"},
		{"ignore rule needs all matchers", map[string]string{"alertname": "X", "namespace": "tmp-1"},
			Target{Route: "default", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1}, ""},
		{"ignore rule with all matchers", map[string]string{"alertname": "X", "namespace": "tmp-1", "severity": "info"},
			Target{Route: "ignore", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1, Ignored: true}, "severity=\"info\""},
		{"regex route is anchored", map[string]string{"alertname": "CIFailing"},
			Target{Route: "ci", Agent: "cicd-engineer", Cooldown: 2 * time.Hour, MaxInFlight: 1}, ""},
		{"anchored regex does not match a suffix", map[string]string{"alertname": "NotCIFailing"},
			Target{Route: "default", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1}, ""},
		{"alias agent and route max_in_flight", map[string]string{"alertname": "APILatencyHigh", "namespace": "prod"},
			Target{Route: "api-latency", Agent: "backend-architect", Cooldown: 30 * time.Minute, MaxInFlight: 2, Notify: []string{"slack"}, NotifySet: true}, ""},
		{"a quiet route posts nowhere", map[string]string{"alertname": "KubePodCrashLooping", "namespace": "staging"},
			Target{Route: "staging-quiet", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1, Notify: []string{}, NotifySet: true}, ""},
		{"first route wins only when all match", map[string]string{"alertname": "APILatencyHigh", "namespace": "dev"},
			Target{Route: "default", Agent: "platform-sre", Cooldown: 30 * time.Minute, MaxInFlight: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := rs.Match(tt.labels)
			reason := got.Reason
			got.Reason = ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Match = %+v, want %+v", got, tt.want)
			}
			if !strings.Contains(reason, tt.reason) || (tt.want.Ignored && reason == "") {
				t.Errorf("reason = %q, want %q", reason, tt.reason)
			}
		})
	}
	if got := rs.MaxInFlightOf("backend-architect"); got != 2 {
		t.Errorf("MaxInFlightOf = %d", got)
	}
}

func TestDefaultFile(t *testing.T) {
	t.Parallel()
	rs, err := Parse("built-in routes", DefaultFile, opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := rs.Match(map[string]string{"alertname": "KubePodCrashLooping"}); got.Agent != "platform-sre" || got.Ignored || got.Cooldown != 30*time.Minute || got.MaxInFlight != 1 {
		t.Fatalf("default target = %+v", got)
	}
	if got := rs.Match(map[string]string{"alertname": "Watchdog"}); !got.Ignored || got.Posts("discord") {
		t.Fatalf("Watchdog not ignored, or posted: %+v", got)
	}
	// Fixture namespaces are investigated, never posted; others post to
	// every configured chat.
	for ns, posts := range map[string]bool{"kubecrew-fixtures": false, "fixtures": false, "e2e": false, "shop": true, "fixtures-prod": true, "": true} {
		got := rs.Match(map[string]string{"alertname": "KubePodOOMKilled", "namespace": ns})
		if got.Ignored || got.Agent != "platform-sre" || got.Posts("discord") != posts || got.Posts("webhook") != posts {
			t.Errorf("namespace %q: %+v, want posts=%v", ns, got, posts)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"empty", "", "r.yaml: empty routes file"},
		{"not yaml", "routes: [\n", "r.yaml:1: not YAML"},
		{"not a mapping", "- a\n", "r.yaml:1: top level must be a mapping"},
		{"unknown top key", "defaults:\n  agent: noor\nroute: []\n", "r.yaml:3: unknown key \"route\" in top level (allowed: correlation, defaults, ignore, queue, routes)"},
		{"unknown route key", "routes:\n  - match:\n      alertname: A\n    agnet: noor\n", "r.yaml:4: unknown key \"agnet\" in route #1"},
		{"agent key in ignore rule", "ignore:\n  - match:\n      a: b\n    agent: noor\n", "r.yaml:4: unknown key \"agent\" in ignore rule #1"},
		{"bad regex", "routes:\n  - match_re:\n      alertname: \"(\"\n", "r.yaml:3: route #1 match_re alertname: bad regular expression"},
		{"unknown agent", "routes:\n  - agent: bob\n", "r.yaml:2: unknown agent \"bob\""},
		{"unknown default agent", "defaults:\n  agent: bob\n", "r.yaml:2: unknown agent \"bob\""},
		{"alerts never straight to sol", "routes:\n  - match:\n      a: b\n    agent: sol\n", "r.yaml:4: route #1 agent \"k8s-engineer\": alerts go to the triager first"},
		{"default never sol", "defaults:\n  agent: k8s-engineer\n", "r.yaml:2: defaults.agent \"k8s-engineer\""},
		{"bad duration", "defaults:\n  cooldown: soon\n", "r.yaml:2: cooldown \"soon\": malformed duration"},
		{"cooldown not above call timeout", "routes:\n  - cooldown: 5m\n", "r.yaml:2: cooldown 5m0s must be longer than AGENT_CALL_TIMEOUT (10m0s)"},
		{"bad max_in_flight", "defaults:\n  max_in_flight: 0\n", "r.yaml:2: max_in_flight \"0\""},
		{"empty ignore rule", "ignore:\n  - name: all\n", "r.yaml:2: ignore rule #1 has no matchers"},
		{"invalid label", "ignore:\n  - match:\n      bad-label: x\n", "r.yaml:3: ignore rule #1 match: invalid label name \"bad-label\""},
		{"repeated key", "defaults:\n  agent: noor\n  agent: noor\n", "r.yaml:3: key \"agent\" repeated in defaults"},
		{"two documents", "routes: []\n---\nroutes: []\n", "r.yaml:2: more than one YAML document"},
		{"routes not a list", "routes:\n  a: b\n", "r.yaml:2: routes must be a list"},
		{"empty namespaces", "ignore:\n  - namespaces: []\n", "r.yaml:2: ignore rule #1 namespaces must be a non-empty list"},
		{"unknown chat", "routes:\n  - notify: [discord, teams]\n", "r.yaml:2: route #1 notify: unknown chat \"teams\" (want discord, slack, webhook)"},
		{"notify not a list", "defaults:\n  notify: discord\n", "r.yaml:2: defaults.notify must be a list"},
		{"unknown correlation key", "correlation:\n  keys: [owner, pod]\n", "r.yaml:2: correlation.keys: unknown key \"pod\" (want node, owner, group, alert)"},
		{"empty correlation keys", "correlation:\n  keys: []\n", "r.yaml:2: correlation.keys is empty"},
		{"repeated correlation key", "correlation:\n  keys:\n    - owner\n    - owner\n", "r.yaml:4: correlation.keys: \"owner\" repeated"},
		{"unknown correlation field", "correlation:\n  key: [owner]\n", "r.yaml:2: unknown key \"key\" in correlation"},
		{"bad max_listed", "correlation:\n  max_listed: many\n", "r.yaml:2: correlation.max_listed \"many\": want an integer from 1 to 200"},
		{"empty node alertname", "correlation:\n  node_alertnames: [KubeNodeNotReady, \"\"]\n", "r.yaml:2: correlation.node_alertnames: empty alertname"},
		{"bad queue bound", "queue:\n  max_per_agent: 0\n", "r.yaml:2: queue.max_per_agent \"0\": want an integer from 1 to 100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("r.yaml", []byte(tt.yaml), opts())
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Errorf("error %T is not *route.Error", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %q, want prefix %q", err, tt.want)
			}
		})
	}
}

package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

func entry(key, severity string) queued {
	a := webhook.Alert{Fingerprint: "fp-" + key, Labels: map[string]string{"alertname": "KubePodCrashLooping", "namespace": "shop", "severity": severity}}
	v := queued{key: key, alert: a, target: route.Target{Agent: "platform-sre"}, sev: severityRank(severity)}
	v.inc.add(memberLine(a), 2)
	return v
}

// TestQueue: one entry per key (a new alert merges), a full queue drops
// its lowest severity first, between equals the newest, and a new entry
// that is the lowest is refused.
func TestQueue(t *testing.T) {
	t.Parallel()
	type step struct {
		key, severity string
		victim        string // key dropped to make room
		self          bool   // the new entry itself dropped
	}
	tests := []struct {
		name  string
		steps []step
		want  string // keys left, by agent map iteration made stable below
	}{
		{"merge by key", []step{{"a", "warning", "", false}, {"a", "critical", "", false}, {"b", "info", "", false}}, "a:5:2 b:1:1"},
		{"full: a lower one is dropped", []step{{"a", "warning", "", false}, {"b", "info", "", false}, {"c", "warning", "", false}, {"d", "critical", "b", false}}, "a:3:1 c:3:1 d:5:1"},
		{"full: between equals the newest goes", []step{{"a", "warning", "", false}, {"b", "warning", "", false}, {"c", "warning", "", false}, {"d", "error", "c", false}}, "a:3:1 b:3:1 d:4:1"},
		{"full: the new one is the lowest", []step{{"a", "critical", "", false}, {"b", "error", "", false}, {"c", "warning", "", false}, {"d", "warning", "", true}, {"e", "", "", true}}, "a:5:1 b:4:1 c:3:1"},
		{"full: a merge is never a drop", []step{{"a", "info", "", false}, {"b", "info", "", false}, {"c", "info", "", false}, {"a", "info", "", false}}, "a:1:2 b:1:1 c:1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := newQueue(3)
			for i, s := range tt.steps {
				victim, self := q.put("platform-sre", entry(s.key, s.severity), 2)
				got := ""
				if victim != nil {
					got = victim.key
				}
				if got != s.victim || self != s.self {
					t.Fatalf("step %d (%s %s): victim %q self %v, want %q %v", i, s.key, s.severity, got, self, s.victim, s.self)
				}
			}
			got := ""
			for _, k := range []string{"a", "b", "c", "d", "e"} {
				if v, ok := q.get("platform-sre", k); ok {
					got += fmt.Sprintf("%s:%d:%d ", k, v.sev, v.inc.total)
				}
			}
			if got != tt.want+" " {
				t.Fatalf("queue = %q, want %q", got, tt.want)
			}
			if q.lenOf("platform-sre") > 3 || q.size() <= 0 {
				t.Fatalf("len %d size %d", q.lenOf("platform-sre"), q.size())
			}
		})
	}
}

func TestIncidentContextBounded(t *testing.T) {
	t.Parallel()
	var m members
	for i := range 500 {
		a := webhook.Alert{Labels: map[string]string{"alertname": "KubePodNotReady", "namespace": fmt.Sprintf("team-%03d", i), "pod": fmt.Sprintf("web-%0120d", i)}}
		m.add(memberLine(a), 20)
	}
	s := incidentContext("node/node-7", m)
	if n := len([]rune(s)); n > MaxAlertContext {
		t.Fatalf("context.incident is %d characters, want <= %d", n, MaxAlertContext)
	}
	if want := `"alerts":500`; !strings.Contains(s, want) || !strings.Contains(s, `"more":`) {
		t.Fatalf("context.incident %s lacks %s and more", s, want)
	}
}

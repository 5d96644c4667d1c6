package dashboard_test

import (
	"html"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
)

// TestPagesRender renders every page against the fixture and checks what
// an on-call engineer must find on it.
func TestPagesRender(t *testing.T) {
	t.Parallel()
	f := newFixture(t, httpauth.Tokens{})
	tests := []struct {
		name, path string
		code       int
		want       []string
		not        []string
	}{
		{"overview", "/", 200, []string{
			// what waits for a human comes first
			`<section id="waiting"`, "Pull requests Vera would not merge (1)", "<code>file:///srv/gitops.git#7</code>",
			"code-reviewer: request_changes", "Recommendations no agent may act on (1)", "payments/Deployment/ledger",
			"over the restart budget (3 in 1h)", "Failed or partial runs (1)", "agent platform-sre: no answer within 10m0s",
			// agents: up, busy, model, last pulse
			`<a href="/agents/platform-sre">platform-sre</a>`, `<td class="agent-down">down`, "healthy",
			// alerts firing: the newest decision of each firing alert
			"Alerts firing (5)", "busy: platform-sre runs inv-disk; queued behind it", "ignored by route Watchdog (always firing by design)",
			// investigations running and recent
			"Running (1)", `<a href="/investigations/inv-disk">inv-disk</a>`, `<a href="/investigations/inv-oom">inv-oom</a>`,
			// decision counts of the last hour by kind
			"Decisions in the last hour (9)", `<td class="decision-dispatched">3</td>`, `<td class="decision-rejected">1</td>`,
			`<time datetime="2026-12-01T19:00:00Z">2026-12-01 19:00:00 UTC</time>`,
		}, []string{"Part of this page could not be read", "&lt;nil&gt;"}},
		{"alerts", "/alerts", 200, []string{
			"deduped: investigation inv-oom covers it (same content)", "cooldown until 2026-12-01T20:05:00Z (investigated 25m ago)",
			"busy: platform-sre runs inv-disk; queued behind it", "alert 0: labels.alertname is missing", `<span class="fp">fp-oom</span>`,
		}, nil},
		{"alerts filtered by decision", "/alerts?decision=cooldown", 200, []string{"cooldown until", `<option selected>cooldown</option>`},
			[]string{"deduped: investigation"}},
		{"one alert's history", "/alerts?fingerprint=fp-crash", 200, []string{"KubePodCrashLooping", "cooldown until", `href="/investigations/inv-crash"`},
			[]string{"KubePodOOMKilled"}},
		{"alerts paged", "/alerts?limit=2", 200, []string{`rel="next"`, "limit=2", "cursor="}, nil},
		{"alerts bad limit", "/alerts?limit=0", 400, []string{"want a whole number from 1 to 500"}, nil},
		{"investigations", "/investigations", 200, []string{"inv-oom", "inv-crash", "inv-disk", `class="status-failed"`}, nil},
		{"investigations filtered", "/investigations?status=failed", 200, []string{"inv-crash"}, []string{"inv-oom"}},
		{"investigation", "/investigations/inv-oom", 200, []string{
			// the chain as one timeline: Noor → Sol → Vera
			"platform-sre — alert", "k8s-engineer — a2a-delegate", "code-reviewer — a2a-ask",
			// findings by severity, the stale one too
			`<h3 class="sev sev-critical">critical (1)</h3>`, `<h3 class="sev sev-medium">medium (1)</h3>`, "3 OOM kills in 10m at limit 64Mi",
			// tool calls and delegations
			"<code>cluster_problems</code>", "<code>bump_workload_memory</code>", "A2A delegate → <b>k8s-engineer</b>",
			"Delegated <b>shop/deployment/checkout/oomkilled/app</b> to <b>k8s-engineer</b>",
			// the PR, its diff and the review
			"Opened PR #7: file:///srv/gitops.git#7", "+              memory: 96Mi", "+      priorityClassName: system-cluster-critical",
			`code-reviewer: verdict <b class="verdict">request_changes</b>`, "NOT MERGED — PR #7 stays open for a human",
			"Outcome: PR #7 left open", `href="/api/v1/investigations/inv-oom/report"`,
		}, nil},
		{"investigation unknown", "/investigations/nope", 404, []string{"no investigation"}, nil},
		{"agents", "/agents", 200, []string{"platform-sre", "cicd-engineer", `<td class="agent-down">down`}, nil},
		{"agent", "/agents/platform-sre", 200, []string{"Pulse schedule", "Tools (2)", "<code>cluster_problems</code>", "noor-pulse-1",
			"Effective configuration", "<code>AGENT_MODEL</code>", "A2A log", "a2a-1"}, nil},
		{"agent by persona name", "/agents/noor", 200, []string{"platform-sre"}, nil},
		{"agent unknown", "/agents/nobody", 404, []string{"no agent"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := get(t, f.URL+tc.path)
			if code != tc.code {
				t.Fatalf("GET %s = %d, want %d\n%s", tc.path, code, tc.code, body)
			}
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("Content-Type %q", ct)
			}
			if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("CSP %q", csp)
			}
			text := html.UnescapeString(body) // html/template writes + as &#43;
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("GET %s lacks %q", tc.path, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s has %q", tc.path, w)
				}
			}
			if t.Failed() {
				t.Logf("body:\n%s", body)
			}
		})
	}
}

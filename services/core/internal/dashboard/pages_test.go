package dashboard_test

import (
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/store"
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
			`<section id="waiting"`, "Pull requests Vera would not merge (2)", `<a href="https://github.example/acme/gitops/pull/7">#7</a>`,
			`code-reviewer: <b class="verdict">request_changes</b>`, "Recommendations no agent may act on (1)", "payments/Deployment/ledger",
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
			checkPage(t, tc.path, text, body, tc.want, tc.not)
			if t.Failed() {
				t.Logf("body:\n%s", body)
			}
		})
	}
}

// TestFiringStormRenders: 2,000 alerts of a storm fire, then 600 other
// decisions follow (alerts that fire and resolve): the newest 500
// decisions hold none of the storm, yet the overview counts every alert
// firing, shows the newest, links to the full list, and the alerts page's
// firing filter reaches the oldest of them.
func TestFiringStormRenders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, httpauth.Tokens{})
	start := now.Add(-3 * time.Hour)
	for i := range 2000 {
		d := store.AlertDecision{Fingerprint: fmt.Sprintf("storm-%04d", i), Alertname: "KubePodCrashLooping", Status: "firing",
			Decision: store.DecisionJoined, Agent: "platform-sre", InvestigationID: "inv-storm",
			Reason: "joined: incident shop/Deployment/api is investigated by inv-storm", At: start.Add(time.Duration(i) * time.Second)}
		if i == 0 {
			d.Decision, d.Reason = store.DecisionDispatched, "new alert"
		}
		record(t, f.Store, d)
	}
	for i := range 300 {
		at := now.Add(-2*time.Hour + time.Duration(i)*10*time.Second)
		fp := fmt.Sprintf("flap-%03d", i)
		record(t, f.Store, store.AlertDecision{Fingerprint: fp, Alertname: "KubeJobFailed", Status: "firing", Decision: store.DecisionDispatched,
			Agent: "platform-sre", Reason: "new alert", At: at})
		record(t, f.Store, store.AlertDecision{Fingerprint: fp, Alertname: "KubeJobFailed", Status: "resolved", Decision: store.DecisionResolved,
			Agent: "platform-sre", Reason: "resolved by Alertmanager", At: at.Add(5 * time.Second)})
	}
	const firing = 2000 + 5 // the storm and the fixture's own
	tests := []struct {
		name, path string
		want, not  []string
	}{
		{"overview", "/", []string{fmt.Sprintf("Alerts firing (%d)", firing), `<a href="/alerts?state=firing">all 2005 alerts firing</a> (1975 more)`,
			"busy: platform-sre runs inv-disk; queued behind it", "storm-1999"}, []string{"flap-", "storm-0000"}},
		{"alerts firing", "/alerts?state=firing&limit=500", []string{fmt.Sprintf("Alerts firing (%d)", firing), "500 alert(s) firing on this page",
			`rel="next"`, "state=firing"}, []string{"flap-"}},
		{"the storm's first alert", "/alerts?state=firing&fingerprint=storm-0000", []string{"storm-0000", "new alert"}, []string{"storm-0001"}},
		{"a resolved one is not firing", "/alerts?state=firing&fingerprint=flap-000", []string{"No decisions match."}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := get(t, f.URL+tc.path)
			text := html.UnescapeString(body)
			if code != 200 {
				t.Fatalf("GET %s = %d\n%s", tc.path, code, body)
			}
			checkPage(t, tc.path, text, text, tc.want, tc.not)
		})
	}
	if code, body, _ := get(t, f.URL+"/alerts?state=pending"); code != 400 || !strings.Contains(body, "want firing") {
		t.Errorf("unknown state = %d %s", code, body)
	}
}

// section is the HTML of the overview's <section id="id">.
func section(t *testing.T, body, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<section id="`+id+`"`)
	if !ok {
		t.Fatalf("no section %s", id)
	}
	s, _, _ := strings.Cut(rest, "</section>")
	return html.UnescapeString(s)
}

// TestPullRequestsFromTheForge: the overview's pull requests are the
// forge's: a PR a pulse opened waits for a person like one an
// investigation opened, one a person merged on the forge is merged and
// waits for no one; with Vera down the page says so and shows what Sol
// read.
func TestPullRequestsFromTheForge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, httpauth.Tokens{})
	pull := func(n int) string { return fmt.Sprintf(`href="https://github.example/acme/gitops/pull/%d"`, n) }
	_, body, _ := get(t, f.URL+"/")
	waiting, prs := section(t, body, "waiting"), section(t, body, "prs")
	for _, w := range []string{"Pull requests Vera would not merge (2)", pull(7), pull(8), "raise batch/report memory (pulse)",
		`code-reviewer: <b class="verdict">comment</b> — The forge refuses an approval`} {
		if !strings.Contains(waiting, w) {
			t.Errorf("waiting lacks %q:\n%s", w, waiting)
		}
	}
	if strings.Contains(waiting, pull(5)) {
		t.Errorf("the PR a person merged still waits:\n%s", waiting)
	}
	for _, w := range []string{"Agent pull requests (3)", pull(5) + ">#5</a> raise web/api memory", `<td class="state-merged">merged</td>`,
		"k8s-engineer (github acme/gitops, read", "code-reviewer (github acme/gitops"} {
		if !strings.Contains(prs, w) {
			t.Errorf("the PR table lacks %q:\n%s", w, prs)
		}
	}
	if strings.Contains(body, "Part of this page could not be read") {
		t.Error("a partial page with every agent up")
	}

	f.Vera.Server.Close() // Vera down: Sol's older read is all there is
	_, body, _ = get(t, f.URL+"/")
	text := html.UnescapeString(body)
	for _, w := range []string{"Part of this page could not be read", "pull requests: code-reviewer could not be asked (down)"} {
		if !strings.Contains(text, w) {
			t.Errorf("with Vera down the overview lacks %q", w)
		}
	}
	prs = section(t, body, "prs")
	if !strings.Contains(prs, `code-reviewer <span class="error">could not be asked (down)</span>`) || !strings.Contains(prs, pull(7)) {
		t.Errorf("with Vera down the PR table:\n%s", prs)
	}
}

// checkPage reports each of want that page path's text lacks and each of
// not that body (the text, or the HTML as served) holds.
func checkPage(t *testing.T, path, text, body string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("GET %s lacks %q", path, w)
		}
	}
	for _, w := range not {
		if strings.Contains(body, w) {
			t.Errorf("GET %s has %q", path, w)
		}
	}
}

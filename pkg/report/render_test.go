package report

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func f(sev, ns, kind, name, reason, detail, rem string) api.Finding {
	return api.Finding{Severity: sev, Namespace: ns, Kind: kind, Name: name, Reason: reason, Detail: detail, Remediation: rem}
}

// sweepFindings are in the order a model might mention them: least severe first.
func sweepFindings() []api.Finding {
	return []api.Finding{
		f("low", "batch", "CronJob", "cleanup", "BackoffLimitExceeded", "last job failed 3 days ago", "check the job's logs"),
		f("medium", "batch", "Deployment", "report-builder", "FailedScheduling", "0/3 nodes match the node selector", "a manifest change (human)"),
		f("critical", "shop", "Deployment", "payments", "OOMKilled", "14 restarts in 2h, limit 256Mi", "raise the memory limit (delegated to k8s-engineer)"),
		f("high", "shop", "Deployment", "cart", "CrashLoopBackOff", "exit 1: missing env DB_URL", "fix the config in Git"),
		f("high", "web", "Deployment", "frontend", "Unhealthy", "readiness probe failed: 503", ""),
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	many := sweepFindings()
	for i := 0; i < 8; i++ {
		many = append(many, f("low", "fixtures", "Pod", fmt.Sprintf("stale-%02d", i), "Evicted", "evicted for ephemeral storage", ""))
	}
	withContainer := f("critical", "shop", "Deployment", "api", "OOMKilled", "killed at 256Mi", "memory-limit PR")
	withContainer.Container = "server"
	cases := []struct {
		name string
		r    Report
	}{
		{"sweep.golden", Report{Title: Title("Health sweep and delegation. Call cluster_problems…", sweepFindings()), Findings: sweepFindings(), MaxFindings: SweepLines}},
		{"sweep_more.golden", Report{Title: Title("Health sweep and delegation.", many), Findings: many, MaxFindings: SweepLines}},
		{"container_and_table.golden", Report{
			Title:    Title("Trend review: weekly", []api.Finding{withContainer}),
			Findings: []api.Finding{withContainer},
			Notes:    "1 problem, delegated to k8s-engineer.\n\n\n| Workload | Restarts | Limit |\n|---|---:|---|\n| shop/api | 14 | 256Mi |\n| shop/cart | 2 | 128Mi |\n\nNot checked: node conditions.\n\x1b[31mred\x1b[0m",
		}},
		{"notes_only.golden", Report{Title: "Trend review", Notes: "Recurring all week: shop/api OOMKilled (5 days).\nDelegated and back: none."}},
		{"lifecycle.golden", lifecycleReport()},
		{"lifecycle_resolved_only.golden", Report{Title: "Health sweep — 1 resolved", Lifecycle: &api.Lifecycle{Cluster: "prod-eu", Complete: true,
			Changes: lifecycleReport().Lifecycle.Resolved()}, MaxFindings: SweepLines}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := Render(c.r)
			golden(t, c.name, r.Body()+"\n")
			if n := len(r.Lines); c.r.MaxFindings > 0 && len(c.r.Findings) > 0 && n >= 10 {
				t.Errorf("sweep rendered %d lines, want under 10", n)
			}
		})
	}
}

// lifecycleReport is a sweep where one finding is new, one still open
// since yesterday, one back again, and one went away.
func lifecycleReport() Report {
	fs := sweepFindings()[:4]
	for i := range fs {
		fs[i].Key = fs[i].DeriveKey()
	}
	day := time.Date(2026, 11, 30, 7, 5, 0, 0, time.UTC)
	resolvedAt := day.Add(24 * time.Hour)
	gone := f("high", "web", "Deployment", "frontend", "Unhealthy", "readiness probe failed: 503", "")
	gone.Key = gone.DeriveKey()
	l := &api.Lifecycle{Cluster: "prod-eu", Complete: true, Changes: []api.LifecycleChange{
		{Change: api.ChangeOpen, Finding: fs[0], FirstSeen: day},
		{Change: api.ChangeNew, Finding: fs[1], FirstSeen: resolvedAt},
		{Change: api.ChangeNew, Finding: fs[2], FirstSeen: resolvedAt},
		{Change: api.ChangeReopened, Finding: fs[3], FirstSeen: day.Add(-48 * time.Hour)},
		{Change: api.ChangeResolved, Finding: gone, FirstSeen: day, ResolvedAt: &resolvedAt},
	}}
	return Report{Title: Title("Health sweep and delegation.", fs) + " — 1 resolved", Findings: fs, MaxFindings: SweepLines, Lifecycle: l}
}

func TestRenderSortsBySeverityInCode(t *testing.T) {
	t.Parallel()
	r := Render(Report{Findings: sweepFindings()})
	var dots []string
	for _, l := range r.Lines {
		dots = append(dots, strings.Fields(l)[0])
	}
	if got := strings.Join(dots, ""); got != "🔴🟠🟠🟡🔵" {
		t.Errorf("dots = %s, want most severe first", got)
	}
	if !strings.HasPrefix(r.Lines[0], "🔴 shop/Deployment/payments — OOMKilled — 14 restarts in 2h, limit 256Mi → raise") {
		t.Errorf("first line = %q", r.Lines[0])
	}
	// Same findings in another order: same body, same hash.
	rev := sweepFindings()
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if Render(Report{Findings: rev}).Hash() != r.Hash() {
		t.Error("the hash depends on the order the findings came in")
	}
}

func TestRenderMoreLine(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 9, 10, 25} {
		var fs []api.Finding
		for i := 0; i < n; i++ {
			fs = append(fs, f("medium", "ns", "Pod", fmt.Sprintf("p%02d", i), "BackOff", "", ""))
		}
		r := Render(Report{Findings: fs, MaxFindings: SweepLines})
		if len(r.Lines) > SweepLines {
			t.Errorf("%d findings: %d lines, want at most %d", n, len(r.Lines), SweepLines)
		}
		if n > SweepLines {
			want := fmt.Sprintf("…and %d more", n-(SweepLines-1))
			if r.Lines[len(r.Lines)-1] != want {
				t.Errorf("%d findings: last line %q, want %q", n, r.Lines[len(r.Lines)-1], want)
			}
		} else if len(r.Lines) != n {
			t.Errorf("%d findings: %d lines", n, len(r.Lines))
		}
	}
}

func TestStripTables(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"no pipes", "plain text\nline two", "plain text\nline two"},
		{"pipe in prose is not a table", "a | b\nnext line", "a | b\nnext line"},
		{"simple", "| a | b |\n|---|---|\n| 1 | 2 |", "a — b\n1 — 2"},
		{"no outer pipes, alignment", "ns | name\n:--- | ---:\nshop | api\nweb | fe\nafter", "ns — name\nshop — api\nweb — fe\nafter"},
		{"text around", "Before.\n\n| x |\n| --- |\n| y |\n\nAfter.", "Before.\n\nx\ny\n\nAfter."},
		{"escaped pipe", "| cmd | out |\n|---|---|\n| a \\| b | ok |", "cmd — out\na | b — ok"},
		{"empty cells dropped", "| a |  | c |\n|---|---|---|\n|  | 2 |  |", "a — c\n2"},
		{"fenced code untouched", "```\n| a | b |\n|---|---|\n```", "```\n| a | b |\n|---|---|\n```"},
		{"two tables", "|a|b|\n|---|---|\n|1|2|\ntext\n|c|\n|---|\n|3|", "a — b\n1 — 2\ntext\nc\n3"},
		{"horizontal rule is not a delimiter", "a | b\n---\nc", "a | b\n---\nc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := StripTables(c.in); got != c.want {
				t.Errorf("StripTables(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestChunksFitAndKeepOrder(t *testing.T) {
	t.Parallel()
	var fs []api.Finding
	for i := 0; i < 60; i++ {
		sev := []string{"low", "medium", "high", "critical"}[i%4]
		fs = append(fs, f(sev, "ns", "Deployment", fmt.Sprintf("app-%02d", i), "Reason",
			strings.Repeat("détail ✓ ", 30), strings.Repeat("fix 🔧 ", 20)))
	}
	r := Render(Report{Findings: fs, Notes: strings.Repeat("x", 9000)})
	chunks := Chunks(r.Lines, DiscordDescriptionMax, UTF16Len)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want several", len(chunks))
	}
	for i, c := range chunks {
		if n := UTF16Len(c); n > DiscordDescriptionMax {
			t.Errorf("chunk %d is %d UTF-16 units, over %d", i, n, DiscordDescriptionMax)
		}
		if RuneLen(c) > DiscordDescriptionMax {
			t.Errorf("chunk %d is %d runes", i, RuneLen(c))
		}
		if strings.HasPrefix(c, "\n") || c == "" {
			t.Errorf("chunk %d starts blank", i)
		}
	}
	// All 15 critical findings come before any other, so they fill the
	// first chunk's start.
	if !strings.HasPrefix(chunks[0], "🔴") {
		t.Errorf("first chunk starts %q", chunks[0][:20])
	}
	lastCritical, firstOther := -1, -1
	for i, c := range chunks {
		if strings.Contains(c, "🔴") {
			lastCritical = i
		}
		if firstOther < 0 && (strings.Contains(c, "🟠") || strings.Contains(c, "🔵")) {
			firstOther = i
		}
	}
	if lastCritical > firstOther {
		t.Errorf("a critical finding is in chunk %d after a less severe one in chunk %d", lastCritical, firstOther)
	}
	// Nothing is lost: the chunks rejoin to the lines (the 9,000-character
	// note line is split, not dropped).
	if got, want := strings.ReplaceAll(strings.Join(chunks, "\n"), "\n", ""), strings.ReplaceAll(strings.Join(r.Lines, "\n"), "\n", ""); got != want {
		t.Error("chunks lost or changed text")
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		task string
		fs   []api.Finding
		want string
	}{
		{"Health sweep and delegation. Call cluster_problems", sweepFindings(), "Health sweep and delegation — 5 problems (1 critical, 2 high, 1 medium, 1 low)"},
		{"Trend review: weekly", nil, "Trend review"},
		{"", []api.Finding{f("high", "a", "Pod", "b", "c", "", "")}, "Report — 1 problem (1 high)"},
		{strings.Repeat("word ", 40), nil, strings.TrimSpace(strings.Repeat("word ", 12)) + "…"},
	}
	for _, c := range cases {
		if got := Title(c.task, c.fs); got != c.want {
			t.Errorf("Title(%q) = %q, want %q", c.task, got, c.want)
		}
	}
}

func TestParseColor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"0x5865F2": 0x5865F2, "#F1C40F": 0xF1C40F, "2ecc71": 0x2ECC71, " 0XE91E63 ": 0xE91E63} {
		got, err := ParseColor(in)
		if err != nil || got != want {
			t.Errorf("ParseColor(%q) = %#x, %v", in, got, err)
		}
	}
	for _, bad := range []string{"blue", "0x12345", "#GGGGGG", "0x1234567"} {
		if _, err := ParseColor(bad); err == nil {
			t.Errorf("ParseColor(%q) accepted", bad)
		}
	}
}

package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

func TestPostReportTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2025, 9, 14, 10, 0, 0, 0, time.UTC)}
	st := store.NewMemory(c.now)
	h := newHook(t)
	dc, _ := NewDiscord(h.url(), nil)
	d := newDeliverer(t, st, c, nil, dc)
	info := RunInfo{Task: "continuous-abc", TaskText: "Health sweep and delegation. Call…", Findings: sweepFindings()}
	inRun := true
	tool := PostReportTool(d, func(context.Context) (RunInfo, bool) { return info, inRun })
	if tool.Name() != "post_report" || tool.Mutating() {
		t.Fatalf("tool %s mutating=%v", tool.Name(), tool.Mutating())
	}
	summary := "5 problems, 1 delegated to k8s-engineer.\n- critical shop/payments: OOMKilled\n- high shop/cart: BackOff\n| a | b |\n|---|---|\n| 1 | 2 |\nNot checked: node conditions."
	args, _ := json.Marshal(map[string]string{"summary": summary})
	out, err := tool.Run(ctx, args)
	if err != nil || !strings.Contains(out, "discord: posted (1 message(s))") {
		t.Fatalf("post_report = %q, %v", out, err)
	}
	var p discordPayload
	if err := json.Unmarshal(h.received()[0], &p); err != nil {
		t.Fatal(err)
	}
	desc := p.Embeds[0].Description
	// Findings first, rendered and sorted in code; the summary's own bullets
	// are dropped (they are the findings again); its table is flattened.
	wantLines := []string{"🔴 shop/Deployment/payments", "🟠 shop/Deployment/cart", "🟠 web/Deployment/frontend", "🟡 batch", "🔵 batch",
		"5 problems, 1 delegated to k8s-engineer.", "a — b", "1 — 2", "Not checked: node conditions."}
	lines := strings.Split(desc, "\n")
	if len(lines) != len(wantLines) {
		t.Fatalf("description:\n%s", desc)
	}
	for i, w := range wantLines {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if strings.Contains(desc, "|") || strings.Contains(desc, "- critical") {
		t.Errorf("pipes or summary bullets reached the channel:\n%s", desc)
	}
	if s, err := st.LastDelivery(ctx, "platform-sre", "continuous-abc", "discord"); err != nil || s.BodyHash == "" {
		t.Errorf("stamp = %+v, %v", s, err)
	}

	// The same call again is deduped, and says so.
	c.add(time.Minute)
	out, _ = tool.Run(ctx, args)
	if !strings.Contains(out, "identical to the last report") || len(h.received()) != 1 {
		t.Errorf("second call = %q, %d posts", out, len(h.received()))
	}
	// Nothing to post, bad args, outside a run: errors for the model.
	info = RunInfo{TaskText: "x"}
	if _, err := tool.Run(ctx, json.RawMessage(`{"summary": "  "}`)); err == nil || !strings.Contains(err.Error(), "nothing to post") {
		t.Errorf("empty report: %v", err)
	}
	if _, err := tool.Run(ctx, json.RawMessage(`{"text": "x"}`)); err == nil {
		t.Error("unknown argument accepted")
	}
	inRun = false
	if _, err := tool.Run(ctx, args); err == nil {
		t.Error("worked outside a run")
	}
	// A manual run's report (no pulse task) dedupes under its own key.
	inRun = true
	info = RunInfo{TaskText: "check shop", Findings: sweepFindings()[:1]}
	if out, err := tool.Run(ctx, args); err != nil || !strings.Contains(out, "posted") {
		t.Errorf("manual post = %q, %v", out, err)
	}
	if _, err := st.LastDelivery(ctx, "platform-sre", ManualTask, "discord"); err != nil {
		t.Errorf("manual stamp: %v", err)
	}
	// No target configured: a clear answer, not an error.
	none := newDeliverer(t, st, c, nil)
	out, err = PostReportTool(none, func(context.Context) (RunInfo, bool) { return info, true }).Run(ctx, args)
	if err != nil || !strings.Contains(out, "No report target is configured") {
		t.Errorf("no targets = %q, %v", out, err)
	}
}

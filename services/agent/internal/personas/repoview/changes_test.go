package repoview

import (
	"context"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// The weekly review reports what changed since the last one: everything
// the first time, nothing (verdict unchanged) when nothing changed — a
// line that moved included — then the new finding and the fixed one.
func TestWeeklyReviewReportsChanges(t *testing.T) {
	t.Parallel()
	doc := "openapi: 3.0.0\nsecurity: [{k: []}]\npaths:\n  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {type: string}}}}\n      responses: {'200': {description: ok}}\n"
	repo := memRepo{"api/a.yaml": doc, "README.md": "the shop"}
	rv := Review{Tool: deployreview.APIToolName, Title: "API design review", Reads: "OpenAPI document", Run: deployreview.ReviewAPI}
	st := store.NewMemory(nil)
	weekly := api.RunRequest{Task: WeeklyTitle + " of the API design (apps/shop/ is not a scope here).", WorkflowType: api.WorkflowPulseTask}
	run := func() api.RunResult {
		return runPlaybookOn(t, st, Playbook(repo, rv), deployreview.APITool(repo), weekly)
	}
	rules := func(fs []api.Finding) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Reason+" "+f.Name)
		}
		return strings.Join(out, ",")
	}

	first := run()
	if first.Status != api.StatusCompleted || rules(first.Findings) != "OA001 api/a.yaml:5,OA005 api/a.yaml:6" ||
		!strings.Contains(first.Answer, "2 findings, all new") {
		t.Fatalf("first review: %s %q %q %s", first.Status, rules(first.Findings), first.Answer, first.Error)
	}
	repo["api/a.yaml"] = "# moved one line down\n" + doc
	second := run()
	if second.Verdict != api.VerdictUnchanged || len(second.Findings) != 0 || !strings.Contains(second.Answer, "nothing changed") {
		t.Fatalf("second review: %s %q %q", second.Verdict, rules(second.Findings), second.Answer)
	}
	// OA005 fixed (a bounded body), OA004 new (DELETE without auth).
	repo["api/a.yaml"] = strings.Replace(strings.Replace(doc, "{type: string}", "{type: string, maxLength: 64}", 1),
		"security: [{k: []}]\n", "security: [{k: []}]\n", 1) + "  /b:\n    delete:\n      security: []\n      responses: {'204': {description: ok}, '404': {description: no}}\n"
	third := run()
	if rules(third.Findings) != "OA004 api/a.yaml:10" || third.Lifecycle == nil {
		t.Fatalf("third review findings %q, lifecycle %+v", rules(third.Findings), third.Lifecycle)
	}
	resolved := third.Lifecycle.Resolved()
	if len(resolved) != 1 || resolved[0].Finding.Reason != "OA005" || !strings.Contains(third.Answer, "1 new, 1 fixed, 1 still open") {
		t.Fatalf("third review resolved %+v, answer %q", resolved, third.Answer)
	}
	// An on-demand review reports everything and leaves the weekly
	// comparison alone.
	manual := runPlaybookOn(t, st, Playbook(repo, rv), deployreview.APITool(repo), api.RunRequest{Task: "review the API"})
	if rules(manual.Findings) != "OA004 api/a.yaml:10,OA001 api/a.yaml:5" {
		t.Fatalf("manual review findings %q", rules(manual.Findings))
	}
	f, err := st.ReadMemory(context.Background(), "backend-architect", lastPath(deployreview.APIToolName))
	if err != nil || strings.Count(f.Content, "\n- ") != 2 {
		t.Fatalf("last review memory: %v\n%s", err, f.Content)
	}
}

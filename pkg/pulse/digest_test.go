package pulse_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
)

const digestMD = `# Noor
## Continuous
- Health sweep and delegation. Call cluster_problems.

## Daily
- Morning digest. Built in code, never by a model. Posted once a day.
`

// The morning digest is built in code (the engine is never called) and
// posted once per day: a second run the same day — the timer once the
// task is due again, or POST /pulse?task=N — posts nothing; the next day
// posts again; a digest that could not be built posts nothing and says so.
func TestDigestPostsOncePerDayWithoutAModel(t *testing.T) {
	t.Parallel()
	ts, _, err := pulse.Parse("noor/PULSE.md", []byte(digestMD))
	if err != nil || len(ts) != 2 || !pulse.IsDigest(ts[1].Text) || pulse.IsDigest(ts[0].Text) {
		t.Fatalf("parse: %v %+v", err, ts)
	}
	c := &clock{t: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)}
	var builds []time.Time
	var fail error
	r := newRig(t, store.NewMemory(c.now), c, "pod-a", func(o *pulse.Options) {
		o.Tasks = ts
		o.Digest = func(_ context.Context, since, now time.Time) (report.Report, error) {
			builds = append(builds, since)
			if fail != nil {
				return report.Report{}, fail
			}
			return report.Report{Title: "Morning digest — 1 new", Notes: "New since " + since.Format(time.RFC3339) + ":\n🔴 shop/Deployment/cart — OOMKilled"}, nil
		}
	})
	run := func() pulse.TickResult {
		res, err := r.s.RunTask(context.Background(), 1, pulse.TriggerHTTP)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := run()
	if len(r.run.reqs) != 0 {
		t.Fatalf("the digest called the engine: %+v", r.run.reqs)
	}
	if r.dc.count() != 1 || !first.Report.Posted || first.Result == nil || first.Result.Verdict != "digest" ||
		!strings.Contains(first.Result.Answer, "OOMKilled") || !builds[0].Equal(c.now().Add(-24*time.Hour)) {
		t.Fatalf("first digest: %d posts, %+v, builds %v", r.dc.count(), first, builds)
	}
	if embeds, _ := r.dc.posts[0]["embeds"].([]any); len(embeds) == 0 || !strings.HasPrefix(embeds[0].(map[string]any)["title"].(string), "Morning digest") {
		t.Errorf("post = %v", r.dc.posts[0])
	}
	c.add(3 * time.Hour)
	if again := run(); r.dc.count() != 1 || again.Report.Posted {
		t.Fatalf("a second digest the same day posted: %d posts, %+v", r.dc.count(), again.Report)
	}
	c.add(24 * time.Hour)
	r.dc.failNext(500)
	if failed := run(); r.dc.count() != 1 || failed.Report.Posted {
		t.Fatalf("a failed delivery counted as posted: %+v", failed.Report)
	}
	if retried := run(); r.dc.count() != 2 || !retried.Report.Posted {
		t.Fatalf("the next day's digest was not posted on retry: %d posts, %+v", r.dc.count(), retried.Report)
	}
	fail = errors.New("store unreachable")
	c.add(24 * time.Hour)
	if broken := run(); r.dc.count() != 2 || broken.Result.Status != "failed" || !strings.Contains(broken.Report.Reason, "store unreachable") {
		t.Fatalf("an unbuildable digest: %d posts, %+v", r.dc.count(), broken)
	}
}

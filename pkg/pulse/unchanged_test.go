package pulse_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// A run that found the last tick's problems (verdict unchanged, no model
// call) is a tick of its own outcome; its findings still go through the
// report's dedupe, so a post that failed at the last tick is retried.
func TestUnchangedTick(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	r := newRig(t, store.NewMemory(c.now), c, "pod-a")
	r.run.setFindings(oom)
	r.dc.failNext(500)
	c.add(45 * time.Minute)
	if res := r.next(t); res.Outcome != "ran" || res.Report.Posted {
		t.Fatalf("first tick: %+v", res)
	}
	r.run.mu.Lock()
	r.run.verdict = api.VerdictUnchanged
	r.run.mu.Unlock()
	c.add(45 * time.Minute)
	res := r.next(t)
	if res.Outcome != "unchanged" || !strings.Contains(res.Message, "unchanged since the last tick (no model call)") || !res.Report.Posted {
		t.Fatalf("unchanged tick: %+v", res)
	}
	if n := testutil.ToFloat64(metric(t, r.reg, "kubecrew_pulse_ticks_total", "unchanged")); n != 1 {
		t.Errorf("kubecrew_pulse_ticks_total{outcome=unchanged} = %v", n)
	}
}

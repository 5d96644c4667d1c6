package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRetentionDeletesOldCoreRecords: upkeep deletes the decisions,
// finished investigations and idle alert states older than RETENTION, on
// Postgres, and keeps what is younger; RETENTION=0 keeps everything.
func TestRetentionDeletesOldCoreRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retention string
		kept      bool
	}{{"7d", false}, {"0", true}} {
		t.Run("RETENTION="+tc.retention, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCore(t, coreOpts{clock: clk, store: openPG(t, pgSchema(t)), env: map[string]string{"RETENTION": tc.retention}})
			post := func(fp string) {
				t.Helper()
				if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert(fp, "KubePodCrashLooping", "prod", "firing"))); code != 200 {
					t.Fatalf("webhook: %d %s", code, b)
				}
				c.WaitIdle()
			}
			post("old00001")
			clk.Advance(8 * 24 * time.Hour)
			post("new00001")
			c.Upkeep(context.Background())

			_, b, _ := do(t, http.MethodGet, c.URL+"/api/v1/alerts?limit=500", nil)
			_, ib, _ := do(t, http.MethodGet, c.URL+"/api/v1/investigations?limit=500", nil)
			_, err := c.Store.GetAlertState(context.Background(), soloKey(alert("old00001", "KubePodCrashLooping", "prod", "firing")))
			oldGone := !strings.Contains(string(b), "old00001") && !strings.Contains(string(ib), "old00001") && err != nil
			if tc.kept == oldGone {
				t.Fatalf("RETENTION=%s: old records gone = %v (state err %v)\ndecisions %s\ninvestigations %s", tc.retention, oldGone, err, b, ib)
			}
			if !strings.Contains(string(b), "new00001") || !strings.Contains(string(ib), "new00001") {
				t.Fatalf("new records pruned: %s %s", b, ib)
			}
			if _, err := c.Store.GetAlertState(context.Background(), soloKey(alert("new00001", "KubePodCrashLooping", "prod", "firing"))); err != nil {
				t.Fatalf("new alert state: %v", err)
			}
		})
	}
}

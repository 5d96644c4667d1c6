package kube

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestWorkloadHealth(t *testing.T) {
	c, _ := brokenClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, kind, workload, container string
		since                           time.Time
		gone, available, rolledOut      bool
		kills                           int
		limit                           string
	}{
		{name: "OOM kills after the time asked", kind: "Deployment", workload: "oomkill", container: "app",
			since: testNow.Add(-time.Hour), kills: 1, limit: "32Mi", rolledOut: true},
		{name: "none after the last kill", kind: "deployments", workload: "oomkill", container: "app",
			since: testNow.Add(-time.Minute), limit: "32Mi", rolledOut: true},
		{name: "another container's kills do not count", kind: "deploy", workload: "oomkill", container: "sidecar",
			since: testNow.Add(-time.Hour), rolledOut: true},
		{name: "a healthy workload", kind: "Deployment", workload: "healthy", container: "app",
			since: testNow.Add(-time.Hour), available: true, rolledOut: true},
		{name: "a workload that is gone", kind: "Deployment", workload: "deleted-meanwhile", container: "app",
			since: testNow.Add(-time.Hour), gone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := c.WorkloadHealth(ctx, fixtureNS, tc.kind, tc.workload, tc.container, tc.since)
			if err != nil {
				t.Fatal(err)
			}
			if h.Gone != tc.gone || h.Available != tc.available || len(h.OOMKills) != tc.kills || h.RolledOut != tc.rolledOut ||
				(tc.limit != "" && !h.LimitIs(tc.limit)) {
				t.Fatalf("health = %+v", h)
			}
			if tc.kills > 0 && (!strings.Contains(h.OOMKills[0], "container app OOMKilled at ") || h.LastOOM.IsZero()) {
				t.Errorf("evidence = %q", h.OOMKills)
			}
		})
	}
	if _, err := c.WorkloadHealth(ctx, fixtureNS, "pods", "x", "", testNow); err == nil {
		t.Error("a pod is not a workload: want an error")
	}
	if !(Health{MemoryLimit: "384Mi"}).LimitIs("402653184") || (Health{MemoryLimit: "384Mi"}).LimitIs("384M") {
		t.Error("LimitIs compares quantities")
	}
}

package kube

import (
	"context"
	"strings"
	"testing"
)

// TestOOMKill reads the kill a memory bump needs from the pods' container
// statuses, with the killed pod's own limit, and says what the cluster
// shows when there is none.
func TestOOMKill(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	ctx := context.Background()
	k, note, err := c.OOMKill(ctx, fixtureNS, "Deployment", "oomkill", "app")
	if err != nil || k == nil || k.Container != "app" || k.Limit != "32Mi" || !strings.HasPrefix(k.Pod, "oomkill") {
		t.Fatalf("oomkill: %+v %q %v", k, note, err)
	}
	k, note, err = c.OOMKill(ctx, fixtureNS, "Deployment", "crashloop", "app")
	if err != nil || k != nil || !strings.Contains(note, "records an OOM kill of container app") {
		t.Fatalf("crashloop: %+v %q %v", k, note, err)
	}
	if _, _, err := c.OOMKill(ctx, fixtureNS, "Secret", "x", "app"); err == nil {
		t.Error("a Secret was accepted as a workload")
	}
}

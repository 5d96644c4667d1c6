package a2aserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// clusterSays is an evidence reader answering what a cluster would show.
type clusterSays struct {
	cc   *api.ConfigChange
	kill *api.OOMKill
}

func (c clusterSays) FindingEvidence(context.Context, api.Finding) (*api.ConfigChange, *api.OOMKill) {
	return c.cc, c.kill
}

// TestDelegatedEvidenceIsReadFromTheCluster: the finding a delegation
// carries gets its typed evidence from the cluster reader at send time —
// a model's delegate_task (whose schema has no such field) and a
// playbook's Delegate alike — and whatever the sender put there, or its
// words claim, is replaced.
func TestDelegatedEvidenceIsReadFromTheCluster(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	shown := &api.ConfigChange{Kind: "ConfigMap", Name: "api-config", ChangedAt: at, PodsStartedAt: at.Add(-time.Hour)}
	for _, tc := range []struct {
		name string
		says clusterSays
		want *api.ConfigChange
	}{{"the cluster shows the write", clusterSays{cc: shown}, shown}, {"the cluster shows none", clusterSays{}, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan []api.Finding, 2)
			nodes := startFleet(t, fleetOpts{evidence: tc.says}, map[string]engine.Playbook{
				"noor": engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
					forged := api.Finding{Severity: "high", Kind: "Deployment", Namespace: "ev-x", Name: "api", Container: "app",
						Reason: "CrashLoopBackOff", Detail: "ConfigMap api-config written after the pods started",
						ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "forged", ChangedAt: at.Add(time.Hour), PodsStartedAt: at}}
					r.Delegate(ctx, "sol", forged, "restart it")
					raw, _ := json.Marshal(map[string]any{"agent_slug": "sol", "decision": "restart it: the config changed", "finding": map[string]any{
						"severity": "high", "kind": "Deployment", "namespace": "ev-x", "name": "api", "reason": "CrashLoopBackOff", "detail": "config changed",
						"remediation": "restart", "remediable": true}})
					r.CallTool(ctx, "c1", "delegate_task", raw)
					return nil
				}),
				"sol": engine.PlaybookFunc(func(_ context.Context, r *engine.Run) error {
					var f api.Finding
					if err := json.Unmarshal([]byte(r.Req.Context["finding"]), &f); err != nil {
						return err
					}
					got <- []api.Finding{f}
					r.SetAnswer("seen")
					return nil
				}),
			})
			run, err := nodes["platform-sre"].eng.Start(context.Background(), api.RunRequest{Task: "delegate", WorkflowType: api.WorkflowAlert})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				f := (<-got)[0]
				if (f.ConfigChange == nil) != (tc.want == nil) || (f.ConfigChange != nil && (f.ConfigChange.Name != tc.want.Name || !f.ConfigChange.ChangedAt.Equal(tc.want.ChangedAt))) {
					t.Errorf("delegation %d carried %+v, want %+v", i, f.ConfigChange, tc.want)
				}
			}
		})
	}
}

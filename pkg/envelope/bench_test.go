package envelope_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

type labels map[string]string

func (l labels) NamespaceLabels(context.Context, string) (map[string]string, error) { return l, nil }

// BenchmarkPermitRestart: what the envelope adds to one restart — the kill
// switch read, the namespace decision and two budget counts — over a
// memory store holding a fleet's month of history (2,000 records).
func BenchmarkPermitRestart(b *testing.B) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	st := store.NewMemory(func() time.Time { return now })
	ctx := context.Background()
	for i := range 2000 {
		if err := st.RecordAction(ctx, store.ActionRecord{Agent: "k8s-engineer", Action: string(envelope.ActionRestart),
			Namespace: fmt.Sprintf("ns-%d", i%200), Kind: "deployments", Name: fmt.Sprintf("w-%d", i%50), Outcome: store.ActionDone,
			At: now.Add(-time.Duration(i) * 20 * time.Minute)}); err != nil {
			b.Fatal(err)
		}
	}
	e := envelope.New(st, labels{envelope.Label: "enabled"}, envelope.Config{Agent: "k8s-engineer", FleetRestartsPerHour: 1000,
		Now: func() time.Time { return now }})
	c := tools.Change{Namespace: "shop", Kind: "deployments", Name: "web"}
	b.ReportAllocs()
	for b.Loop() {
		if v, err := e.Permit(ctx, envelope.ActionRestart, c); err != nil || !v.Act {
			b.Fatal(v, err)
		}
	}
}

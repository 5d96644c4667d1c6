package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func lifeFinding(ns, kind, name, reason, severity string) api.Finding {
	f := api.Finding{Namespace: ns, Kind: kind, Name: name, Reason: reason, Severity: severity, Detail: reason + " now"}
	f.Key = f.DeriveKey()
	return f
}

func changeList(cs []FindingChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Change + " " + c.State.Key
	}
	return out
}

// contractLifecycle: a finding is new, then still open since its first
// sighting, resolved only by a complete sweep of a scope that covers it,
// and reopened when it comes back; clusters are separate lives.
func contractLifecycle(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	oom := lifeFinding("shop", "Deployment", "cart", "OOMKilled", api.SeverityCritical)
	crash := lifeFinding("shop", "Deployment", "api", "CrashLoopBackOff", api.SeverityHigh)
	node := lifeFinding("", "Node", "n1", "NodeNotReady", api.SeverityCritical)
	other := lifeFinding("billing", "Deployment", "ledger", "ImagePullBackOff", api.SeverityHigh)
	first := utc(c.Now())

	steps := []struct {
		name string
		obs  Observation
		want []string
	}{
		{"first sweep: all new", Observation{Complete: true, Findings: []api.Finding{oom, crash, node, other}},
			[]string{"new " + oom.Key, "new " + crash.Key, "new " + node.Key, "new " + other.Key}},
		{"second sweep sees all: still open", Observation{Complete: true, Findings: []api.Finding{oom, crash, node, other}},
			[]string{"open " + oom.Key, "open " + crash.Key, "open " + node.Key, "open " + other.Key}},
		{"an incomplete sweep resolves nothing", Observation{Complete: false, Findings: []api.Finding{oom}},
			[]string{"open " + oom.Key}},
		{"a namespace sweep resolves only in its namespace", Observation{Namespace: "shop", Complete: true, Findings: []api.Finding{oom}},
			[]string{"open " + oom.Key, "resolved " + crash.Key}},
		{"a complete sweep of all resolves the rest", Observation{Complete: true, Findings: []api.Finding{oom}},
			[]string{"open " + oom.Key, "resolved " + other.Key, "resolved " + node.Key}}, // resolved ones by key
		{"it comes back: reopened", Observation{Complete: true, Findings: []api.Finding{oom, crash}},
			[]string{"open " + oom.Key, "reopened " + crash.Key}},
	}
	for i, st := range steps {
		c.Advance(time.Hour)
		st.obs.Cluster, st.obs.Agent, st.obs.RunID = "prod-eu", "platform-sre", fmt.Sprintf("run-%d", i)
		got, err := s.ObserveFindings(ctx, st.obs)
		mustNil(t, err)
		if !reflect.DeepEqual(changeList(got), st.want) {
			t.Fatalf("%s: changes %v, want %v", st.name, changeList(got), st.want)
		}
	}
	// Another cluster with the same keys is another life.
	got, err := s.ObserveFindings(ctx, Observation{Cluster: "prod-us", Agent: "platform-sre", RunID: "us-1", Complete: true, Findings: []api.Finding{crash}})
	mustNil(t, err)
	if !reflect.DeepEqual(changeList(got), []string{"new " + crash.Key}) {
		t.Fatalf("prod-us: %v", changeList(got))
	}

	open, next, err := s.ListFindingStates(ctx, LifecycleFilter{State: FindingOpen, Cluster: "prod-eu"}, Page{})
	mustNil(t, err)
	if next != "" || len(open) != 2 {
		t.Fatalf("open in prod-eu = %+v (next %q), want 2", open, next)
	}
	byKey := map[string]FindingState{}
	for _, st := range open {
		byKey[st.Key] = st
	}
	if o := byKey[oom.Key]; !o.FirstSeen.Equal(first.Add(time.Hour)) || o.State != FindingOpen || o.ResolvedAt != nil || o.Finding.Cluster != "prod-eu" || o.RunID != "run-5" {
		t.Fatalf("oom state = %+v, want open since the first sweep, last seen by run-5", o)
	}
	if cr := byKey[crash.Key]; cr.Reopened != 1 || cr.ResolvedAt != nil || !cr.FirstSeen.Equal(first.Add(time.Hour)) {
		t.Fatalf("crash state = %+v, want reopened once, first seen kept", cr)
	}
	resolved, _, err := s.ListFindingStates(ctx, LifecycleFilter{State: FindingResolved}, Page{})
	mustNil(t, err)
	if len(resolved) != 2 {
		t.Fatalf("resolved = %+v, want node and ledger", resolved)
	}
	for _, r := range resolved {
		if r.ResolvedAt == nil || !r.ResolvedAt.Equal(first.Add(5*time.Hour)) || r.RunID != "run-4" {
			t.Fatalf("resolved %s = %+v, want resolved by run-4", r.Key, r)
		}
	}

	filters := []struct {
		name string
		f    LifecycleFilter
		want int
	}{
		{"severity", LifecycleFilter{Severities: []string{api.SeverityCritical}}, 2},
		{"namespace", LifecycleFilter{Namespace: "shop"}, 3},
		{"kind and reason", LifecycleFilter{Kind: "Deployment", Reason: "CrashLoopBackOff"}, 2},
		{"resolved since", LifecycleFilter{ResolvedSince: first.Add(5 * time.Hour)}, 2},
		{"resolved since later", LifecycleFilter{ResolvedSince: first.Add(5*time.Hour + time.Second)}, 0},
		{"first seen since", LifecycleFilter{FirstSeenSince: first.Add(2 * time.Hour)}, 1},
		{"agent", LifecycleFilter{Agent: "nobody"}, 0},
	}
	for _, tc := range filters {
		got, _, err := s.ListFindingStates(ctx, tc.f, Page{})
		mustNil(t, err)
		if len(got) != tc.want {
			t.Fatalf("filter %s: %d states %+v, want %d", tc.name, len(got), got, tc.want)
		}
	}
	// Pages of one, newest first by first sighting, cover all five once.
	seen := map[string]bool{}
	cur := ""
	for range 10 {
		items, next, err := s.ListFindingStates(ctx, LifecycleFilter{}, Page{Limit: 1, Cursor: cur})
		mustNil(t, err)
		for _, it := range items {
			if seen[it.ID()] {
				t.Fatalf("state %s listed twice", it.ID())
			}
			seen[it.ID()] = true
		}
		if next == "" {
			break
		}
		cur = next
	}
	if len(seen) != 5 {
		t.Fatalf("pages listed %d states, want 5: %v", len(seen), seen)
	}
	for _, bad := range []LifecycleFilter{{State: "closed"}, {Severities: []string{"urgent"}}} {
		_, _, err := s.ListFindingStates(ctx, bad, Page{})
		mustIs(t, err, ErrInvalid)
	}
	_, err = s.ObserveFindings(ctx, Observation{Agent: "platform-sre"})
	mustIs(t, err, ErrInvalid)
}

// TestObserveIsPure: the lifecycle step on its own, as a table.
func TestObserveIsPure(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	a := lifeFinding("shop", "Deployment", "a", "OOMKilled", api.SeverityCritical)
	b := lifeFinding("shop", "Deployment", "b", "OOMKilled", api.SeverityCritical)
	open := func(f api.Finding) FindingState {
		return FindingState{Cluster: "c", Key: f.Key, Finding: f, State: FindingOpen, FirstSeen: at.Add(-time.Hour), LastSeen: at.Add(-time.Hour)}
	}
	resolvedAt := at.Add(-time.Minute)
	gone := open(b)
	gone.State, gone.ResolvedAt = FindingResolved, &resolvedAt
	tests := []struct {
		name string
		prev []FindingState
		obs  Observation
		want []string
	}{
		{"nothing known, nothing seen", nil, Observation{Complete: true}, []string{}},
		{"seen twice in one sweep counts once", nil, Observation{Complete: true, Findings: []api.Finding{a, a}}, []string{"new " + a.Key}},
		{"resolved stays resolved when unseen", []FindingState{gone}, Observation{Complete: true}, []string{}},
		{"incomplete: open stays open", []FindingState{open(a)}, Observation{Complete: false}, []string{}},
		{"other namespace: not covered", []FindingState{open(a)}, Observation{Complete: true, Namespace: "billing"}, []string{}},
		{"covered and unseen: resolved", []FindingState{open(a)}, Observation{Complete: true, Namespace: "shop"}, []string{"resolved " + a.Key}},
		{"resolved and seen: reopened", []FindingState{gone}, Observation{Findings: []api.Finding{b}}, []string{"reopened " + b.Key}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := map[string]FindingState{}
			for _, p := range tc.prev {
				prev[p.Key] = p
			}
			tc.obs.Cluster, tc.obs.Agent, tc.obs.At = "c", "platform-sre", at
			o, err := prepObservation(tc.obs, time.Now)
			mustNil(t, err)
			got := changeList(observe(prev, o))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes %v, want %v", got, tc.want)
			}
		})
	}
}

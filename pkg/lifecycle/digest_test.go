package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// prs is a forge's answer: open agent PRs, the stale ones among them.
type prs struct {
	open, stale []gitops.PR
	err         error
}

func (p prs) ListAgentPRs(context.Context, string) ([]gitops.PR, error) { return p.open, p.err }
func (p prs) StalePRs(context.Context) ([]gitops.PR, []api.Finding, error) {
	return p.stale, nil, p.err
}

func finding(ns, name, reason, sev string) api.Finding {
	f := api.Finding{Namespace: ns, Kind: "Deployment", Name: name, Reason: reason, Severity: sev, Detail: reason + " now"}
	f.Key = f.DeriveKey()
	return f
}

// The digest reads the lifecycle as it is after a day of sweeps: what
// appeared since yesterday, what stands since before, what went away, and
// the PRs a person has to look at.
func TestDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	st := store.NewMemory(func() time.Time { return now })
	old, fresh, gone := finding("shop", "api", "CrashLoopBackOff", "high"), finding("shop", "cart", "OOMKilled", "critical"), finding("web", "front", "ImagePullBackOff", "critical")
	sweep := func(at time.Time, fs ...api.Finding) {
		if _, err := st.ObserveFindings(ctx, store.Observation{Cluster: "prod-eu", Agent: "platform-sre", RunID: "r", At: at, Complete: true, Findings: fs}); err != nil {
			t.Fatal(err)
		}
	}
	sweep(now.Add(-72*time.Hour), old, gone)
	sweep(now.Add(-2*time.Hour), old, fresh) // gone resolved, fresh new
	created := now.Add(-30 * time.Hour)
	p := prs{
		open: []gitops.PR{{Number: 4, Title: "fix(cart): raise app memory limit", Branch: "agent/fix/cart", Author: "k8s-engineer", CreatedAt: created, URL: "https://github.com/acme/gitops/pull/4"},
			{Number: 1, Title: "fix(api): raise memory", Branch: "agent/fix/api", Author: "k8s-engineer", CreatedAt: now.Add(-200 * time.Hour), URL: "https://github.com/acme/gitops/pull/1"}},
		stale: []gitops.PR{{Number: 1, Title: "fix(api): raise memory", Branch: "agent/fix/api", Author: "k8s-engineer", CreatedAt: now.Add(-200 * time.Hour), URL: "https://github.com/acme/gitops/pull/1"}},
	}
	rep, err := Digest(ctx, st, p, now.Add(-24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Title != "Morning digest — 1 new, 1 still open, 1 resolved, 1 PRs waiting, 1 stale" {
		t.Errorf("title = %q", rep.Title)
	}
	for _, want := range []string{
		"New since 2026-12-01 07:00 UTC (1):\n🔴 shop/Deployment/cart — OOMKilled — OOMKilled now [prod-eu] · first seen 2026-12-02 05:00 UTC",
		"Still open (1):\n🟠 shop/Deployment/api — CrashLoopBackOff — CrashLoopBackOff now [prod-eu] · still open since 2026-11-29 07:00 UTC",
		"Resolved (1):\n🔴 web/Deployment/front — ImagePullBackOff — ImagePullBackOff now [prod-eu] · resolved 2026-12-02 05:00 UTC (open since 2026-11-29 07:00 UTC)",
		"Agent PRs waiting for a human (1):\n#4 fix(cart): raise app memory limit — agent/fix/cart, by k8s-engineer, open 30 h: https://github.com/acme/gitops/pull/4",
		"Stale agent PRs (1):\n#1 fix(api): raise memory — agent/fix/api, by k8s-engineer, open 8 days: https://github.com/acme/gitops/pull/1",
	} {
		if !strings.Contains(rep.Notes, want) {
			t.Errorf("digest lacks\n%s\n--- got ---\n%s", want, rep.Notes)
		}
	}
	// A forge that does not answer is said, not skipped; nothing at all is
	// said too.
	rep, _ = Digest(ctx, st, prs{err: errors.New("forge down")}, now.Add(-24*time.Hour), now)
	if !strings.Contains(rep.Notes, "Agent PRs: could not be listed: forge down") {
		t.Errorf("forge error not reported:\n%s", rep.Notes)
	}
	empty, _ := Digest(ctx, store.NewMemory(nil), nil, now.Add(-24*time.Hour), now)
	if !strings.Contains(empty.Notes, "Nothing open, nothing new, nothing resolved") {
		t.Errorf("empty digest = %q", empty.Notes)
	}
}

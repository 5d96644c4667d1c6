package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// contractEscalations: follow-up checks of actions, and the paging ledger
// that lets one key page once and resolve once — also when claimed
// concurrently.
func contractEscalations(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	chk := func(id, action, status string) ActionCheck {
		return ActionCheck{ID: id, ActionID: action, Agent: "code-reviewer", Namespace: "shop", Kind: "Deployment", Name: "cart",
			Container: "app", Status: status, Detail: "3 OOM kills since the merge", PageKey: "kubecrew/shop-deployment-cart-app-oomkilled"}
	}
	mustNil(t, s.RecordCheck(ctx, chk("c1", "a1", CheckNotFixed)))
	c.Advance(time.Minute)
	mustNil(t, s.RecordCheck(ctx, chk("c2", "a1", CheckFixed)))
	mustNil(t, s.RecordCheck(ctx, chk("c3", "a2", CheckUnknown)))
	mustNil(t, s.RecordCheck(ctx, chk("c2", "a1", CheckFixed))) // retry: kept once
	mustIs(t, s.RecordCheck(ctx, chk("c4", "a1", "maybe")), ErrInvalid)
	mustIs(t, s.RecordCheck(ctx, ActionCheck{Agent: "x", Status: CheckFixed}), ErrInvalid)
	got, err := s.ListChecks(ctx, CheckFilter{ActionID: "a1"}, 0)
	mustNil(t, err)
	if len(got) != 2 || got[0].ID != "c2" || got[1].ID != "c1" || got[1].Detail != "3 OOM kills since the merge" || !got[0].At.Equal(ts(c.Now())) {
		t.Fatalf("checks of a1, newest first: %+v", got)
	}
	if got, _ := s.ListChecks(ctx, CheckFilter{Status: CheckUnknown}, 0); len(got) != 1 || got[0].ActionID != "a2" {
		t.Fatalf("unknown checks: %+v", got)
	}

	key := "kubecrew/shop-deployment-cart-app-oomkilled"
	var opened atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.ClaimPage(ctx, PageRecord{Key: key, Target: "pagerduty", Origin: "action a1", Summary: "fix did not work"})
			if err != nil {
				t.Error(err)
			}
			if ok {
				opened.Add(1)
			}
		})
	}
	wg.Wait()
	if opened.Load() != 1 {
		t.Fatalf("8 concurrent claims of one key opened it %d times, want 1", opened.Load())
	}
	if _, err := s.GetPage(ctx, "nope"); err == nil {
		t.Fatal("GetPage of a key never opened: want ErrNotFound")
	}
	open, err := s.ListPages(ctx, true, 0)
	mustNil(t, err)
	if len(open) != 1 || open[0].Key != key || open[0].Origin != "action a1" || open[0].ResolvedAt != nil {
		t.Fatalf("open pages: %+v", open)
	}
	ok, err := s.ResolvePage(ctx, key, "the OOM kills stopped", c.Now())
	mustNil(t, err)
	if !ok {
		t.Fatal("resolve of an open page: want true")
	}
	if ok, _ := s.ResolvePage(ctx, key, "again", c.Now()); ok {
		t.Fatal("a second resolve: want false (resolves once)")
	}
	p, err := s.GetPage(ctx, key)
	mustNil(t, err)
	if p.ResolvedAt == nil || p.Note != "the OOM kills stopped" {
		t.Fatalf("resolved page: %+v", p)
	}
	if open, _ := s.ListPages(ctx, true, 0); len(open) != 0 {
		t.Fatalf("open pages after the resolve: %+v", open)
	}
	// The problem comes back: the key opens again, once.
	c.Advance(time.Hour)
	if ok, _ := s.ClaimPage(ctx, PageRecord{Key: key, Origin: "action a3"}); !ok {
		t.Fatal("a resolved key claimed again: want true")
	}
	if ok, _ := s.ClaimPage(ctx, PageRecord{Key: key}); ok {
		t.Fatal("an open key claimed again: want false")
	}
	// A claim whose trigger failed is released and can be claimed again.
	mustNil(t, s.ReleasePage(ctx, key))
	if ok, _ := s.ClaimPage(ctx, PageRecord{Key: key, Origin: "retry"}); !ok {
		t.Fatal("a released key: want true")
	}
	if all, _ := s.ListPages(ctx, false, 0); len(all) != 1 || all[0].Origin != "retry" || all[0].ResolvedAt != nil {
		t.Fatalf("all pages: %+v", all)
	}
	_, err = s.ClaimPage(ctx, PageRecord{})
	mustIs(t, err, ErrInvalid)
}

package app

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	coreapi "github.com/kubecrew/kubecrew/services/core/internal/api"
)

// reapPages bounds how far back (in pages of store.MaxLimit) upkeep looks
// for lost investigations.
const reapPages = 10

func (a *App) maintain(ctx context.Context) {
	t := time.NewTicker(a.d.MaintainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.Upkeep(ctx)
		}
	}
}

// Upkeep reclaims lost investigations, offers free slots to queued alerts
// and applies RETENTION. It runs every MaintainEvery; tests call it
// directly.
func (a *App) Upkeep(ctx context.Context) {
	a.reclaim(ctx)
	a.prune(ctx)
	a.reassertActions(ctx)
}

// reassertActions re-sends the kill switch to agents that lost it (docs/MANUAL.md,
// "The action envelope"), so a restarted agent is paused within one upkeep.
func (a *App) reassertActions(ctx context.Context) {
	fixed, err := coreapi.ReassertActions(ctx, a.apiDeps)
	if err != nil {
		a.d.Log.Warn("upkeep: kill switch", zap.Error(err))
	}
	if len(fixed) > 0 {
		a.d.Log.Warn("upkeep: agents held another kill switch state; sent the core's", zap.Strings("agents", fixed))
	}
}

// reclaim is the part of upkeep New runs before serving.
func (a *App) reclaim(ctx context.Context) {
	if n := a.reap(ctx); n > 0 {
		a.d.Log.Warn("reclaimed lost investigations", zap.Int("count", n))
	}
	a.pipe.DrainAll(ctx)
}

// prune deletes decisions, finished investigations and idle alert states
// older than RETENTION, in small batches (docs/MANUAL.md, "Retention").
func (a *App) prune(ctx context.Context) {
	if _, err := store.PruneTick(ctx, a.d.Store, store.CoreData, a.cfg.Retention, a.d.Now(), a.d.Log); err != nil {
		a.metrics.StoreErrors.WithLabelValues("prune").Inc()
		a.d.Log.Warn("upkeep: retention", zap.Error(err))
	}
}

// reap marks running investigations older than staleAfter as failed: their
// core stopped mid-call, and until recorded their agent's slot stays taken
// (a jammed queue is how a pipeline stalls for weeks, seed lesson 9).
func (a *App) reap(ctx context.Context) int {
	cutoff := a.d.Now().Add(-a.staleAfter())
	n, cursor := 0, ""
	for range reapPages {
		invs, next, err := a.d.Store.ListInvestigations(ctx, store.Page{Limit: store.MaxLimit, Cursor: cursor})
		if err != nil {
			a.metrics.StoreErrors.WithLabelValues("list_investigations").Inc()
			a.d.Log.Warn("upkeep: list investigations", zap.Error(err))
			return n
		}
		for _, inv := range invs {
			if inv.Status != api.StatusRunning || !inv.StartedAt.Before(cutoff) {
				continue
			}
			now := a.d.Now()
			inv.Status = api.StatusFailed
			inv.Error = fmt.Sprintf("no outcome %s after dispatch: presumed lost (its core stopped mid-call)", a.staleAfter())
			inv.FinishedAt = &now
			if err := a.pub.FinishInvestigation(ctx, inv); err != nil {
				a.metrics.StoreErrors.WithLabelValues("finish_investigation").Inc()
				a.d.Log.Warn("upkeep: reclaim investigation", zap.String("investigation_id", inv.ID), zap.Error(err))
				continue
			}
			a.metrics.Investigations.WithLabelValues(inv.Agent, api.StatusFailed).Inc()
			n++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return n
}

// Package escalate pages a human from the core (docs/MANUAL.md, "The action
// envelope": verify, then escalate): when an alert investigation ends with
// a critical finding no agent may fix, the finding's workload is paged
// through the incident API — once per workload, the correlation key the
// agents' follow-up checks use too — and the page is resolved when
// Alertmanager resolves the alert.
package escalate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Escalator pages (*pager.Escalator).
type Escalator interface {
	Enabled() bool
	Page(ctx context.Context, inc pager.Incident, origin string) (string, error)
	Resolve(ctx context.Context, key, note string) (string, error)
}

// Pages lists the paging ledger (the store).
type Pages interface {
	ListPages(ctx context.Context, open bool, limit int) ([]store.PageRecord, error)
}

// Escalate is the core's side of escalation.
type Escalate struct {
	esc      Escalator
	pages    Pages
	linkBase string
	log      *zap.Logger
	wg       sync.WaitGroup
}

// New returns the core's escalation; linkBase is where people open the
// core's API (PAGE_LINK_BASE), for the investigation report's link.
func New(esc Escalator, pages Pages, linkBase string, log *zap.Logger) *Escalate {
	if log == nil {
		log = zap.NewNop()
	}
	return &Escalate{esc: esc, pages: pages, linkBase: strings.TrimRight(linkBase, "/"), log: log}
}

// Origin is what the ledger says opened an alert's pages.
func Origin(fingerprint string) string { return "alert " + fingerprint }

// Unfixable reports whether a finding pages: critical, and no agent may
// fix it.
func Unfixable(f api.Finding) bool { return f.Severity == "critical" && !f.Remediable }

// Investigated pages every critical finding of inv no agent may fix.
func (e *Escalate) Investigated(ctx context.Context, inv store.Investigation) {
	if e == nil || !e.esc.Enabled() {
		return
	}
	for _, f := range inv.Findings {
		if !Unfixable(f) || f.Name == "" {
			continue
		}
		inc := pager.Incident{Key: pager.WorkloadKey(f.Namespace, f.Kind, f.Name, f.Container), Severity: pager.SeverityCritical,
			Summary: fmt.Sprintf("kubecrew: %s %s/%s — %s: %s; no agent may fix it, a human is needed", f.Kind, f.Namespace, f.Name, f.Reason, f.Detail),
			Source:  fmt.Sprintf("%s/%s/%s", f.Namespace, f.Kind, f.Name), Component: f.Container, Group: f.Namespace, Class: f.Reason,
			Details: map[string]string{"alertname": inv.Alertname, "fingerprint": inv.Fingerprint, "investigation_id": inv.ID,
				"agent": inv.Agent, "run_id": inv.RunID, "finding": f.Key, "reason": f.Reason, "detail": f.Detail, "remediation": f.Remediation},
			Link: e.link(inv.ID)}
		if inc.Link == "" {
			inc.Details["report"] = "GET /api/v1/investigations/" + inv.ID + "/report on the core"
		}
		res, err := e.esc.Page(context.WithoutCancel(ctx), inc, Origin(inv.Fingerprint))
		if err != nil {
			e.log.Error("paging a human failed", zap.String("key", inc.Key), zap.String("investigation_id", inv.ID), zap.Error(err))
			continue
		}
		e.log.Info("critical finding no agent may fix", zap.String("key", inc.Key), zap.String("page", res), zap.String("investigation_id", inv.ID))
	}
}

// AlertResolved resolves, in the background, the pages the alert's
// investigations opened: the webhook's answer does not wait on the
// incident API.
func (e *Escalate) AlertResolved(ctx context.Context, fingerprint string) {
	if e == nil || !e.esc.Enabled() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	e.wg.Go(func() { e.resolveAlert(ctx, fingerprint) })
}

// Wait returns when every resolve started has ended.
func (e *Escalate) Wait() {
	if e != nil {
		e.wg.Wait()
	}
}

func (e *Escalate) resolveAlert(ctx context.Context, fingerprint string) {
	open, err := e.pages.ListPages(ctx, true, store.MaxLimit)
	if err != nil {
		e.log.Error("paging ledger unreadable: the alert's pages stay open", zap.String("fingerprint", fingerprint), zap.Error(err))
		return
	}
	for _, p := range open {
		if p.Origin != Origin(fingerprint) {
			continue
		}
		if _, err := e.esc.Resolve(ctx, p.Key, "Alertmanager resolved the alert"); err != nil {
			e.log.Error("resolving a page failed", zap.String("key", p.Key), zap.Error(err))
		}
	}
}

func (e *Escalate) link(id string) string {
	if e.linkBase == "" || id == "" {
		return ""
	}
	return e.linkBase + "/api/v1/investigations/" + id + "/report"
}

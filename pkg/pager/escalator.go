package pager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Ledger remembers which incidents are open (the store's paging ledger).
type Ledger interface {
	ClaimPage(ctx context.Context, p store.PageRecord) (bool, error)
	ReleasePage(ctx context.Context, key string) error
	ResolvePage(ctx context.Context, key, note string, at time.Time) (bool, error)
}

// Escalator pages through a Pager at most once per open incident: it
// claims the key in the ledger first and triggers only when the claim is
// its own; a trigger that fails releases the claim so a later attempt
// pages. Resolve closes the ledger's incident first and sends the resolve
// only when this call closed it; a resolve that fails reopens it.
type Escalator struct {
	p   Pager
	l   Ledger
	now func() time.Time
	log *zap.Logger
}

// NewEscalator returns the escalator; p nil means paging is off (Page and
// Resolve report Off). now nil is time.Now, log nil discards.
func NewEscalator(p Pager, l Ledger, now func() time.Time, log *zap.Logger) *Escalator {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Escalator{p: p, l: l, now: now, log: log}
}

// What Page and Resolve did.
const (
	Off       = "off"       // no incident API is configured
	Triggered = "triggered" // the incident was opened now
	AlreadyOn = "already open"
	Resolved  = "resolved"
	NotOpen   = "not open"
)

// Enabled reports whether an incident API is configured.
func (e *Escalator) Enabled() bool { return e != nil && e.p != nil }

// Target names the incident API ("" when off).
func (e *Escalator) Target() string {
	if !e.Enabled() {
		return ""
	}
	return e.p.Name()
}

// Page opens the incident inc.Key once: Triggered when this call paged,
// AlreadyOn when it was open, Off without an incident API.
func (e *Escalator) Page(ctx context.Context, inc Incident, origin string) (string, error) {
	if !e.Enabled() {
		return Off, nil
	}
	if err := checkIncident(inc); err != nil {
		return "", err
	}
	if inc.At.IsZero() {
		inc.At = e.now()
	}
	mine, err := e.l.ClaimPage(ctx, store.PageRecord{Key: inc.Key, Target: e.p.Name(), Origin: origin, Summary: inc.Summary,
		Link: inc.Link, OpenedAt: inc.At})
	if err != nil {
		return "", fmt.Errorf("paging ledger: %w", err)
	}
	if !mine {
		return AlreadyOn, nil
	}
	if err := e.p.Trigger(ctx, inc); err != nil {
		if rerr := e.l.ReleasePage(context.WithoutCancel(ctx), inc.Key); rerr != nil {
			err = errors.Join(err, fmt.Errorf("releasing the claim: %w", rerr))
		}
		return "", err
	}
	e.log.Info("paged a human", zap.String("target", e.p.Name()), zap.String("key", inc.Key), zap.String("origin", origin),
		zap.String("summary", inc.Summary))
	return Triggered, nil
}

// Resolve closes the incident key once: Resolved when this call closed
// it, NotOpen when it was not open, Off without an incident API.
func (e *Escalator) Resolve(ctx context.Context, key, note string) (string, error) {
	if !e.Enabled() {
		return Off, nil
	}
	closed, err := e.l.ResolvePage(ctx, key, note, e.now())
	if err != nil {
		return "", fmt.Errorf("paging ledger: %w", err)
	}
	if !closed {
		return NotOpen, nil
	}
	if err := e.p.Resolve(ctx, key, note); err != nil {
		if _, rerr := e.l.ClaimPage(context.WithoutCancel(ctx), store.PageRecord{Key: key, Target: e.p.Name(), Origin: "resolve failed"}); rerr != nil {
			err = errors.Join(err, fmt.Errorf("reopening the claim: %w", rerr))
		}
		return "", err
	}
	e.log.Info("resolved a page", zap.String("target", e.p.Name()), zap.String("key", key), zap.String("note", note))
	return Resolved, nil
}

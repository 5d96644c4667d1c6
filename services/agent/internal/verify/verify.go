// Package verify is the follow-up check after an action (docs/MANUAL.md, "The
// action envelope": verify, then escalate). After a rollout restart or a
// merged memory bump it waits for the change to be live — the workload
// rolled out and, for a bump, the new limit in the live spec, which is
// what the GitOps controller applying the merged revision shows — or a
// bounded wait, then watches the workload for a window: did the OOM kills
// stop, is it available? The result is recorded on the action. When the
// fix did not work a human is paged through the incident API, once per
// workload (the correlation key), and the page is resolved once the
// workload has gone a whole window without an OOM kill and is available.
package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Cluster reads a workload's health (*kube.Client).
type Cluster interface {
	WorkloadHealth(ctx context.Context, namespace, kind, name, container string, since time.Time) (kube.Health, error)
}

// Checks records the checks (the store).
type Checks interface {
	RecordCheck(ctx context.Context, c store.ActionCheck) error
}

// Escalator pages a human (*pager.Escalator).
type Escalator interface {
	Page(ctx context.Context, inc pager.Incident, origin string) (string, error)
	Resolve(ctx context.Context, key, note string) (string, error)
}

// Actions followed: what changes production.
const (
	ActionRestart = "k8s.rollout.restart"
	ActionMerge   = "gitops.pr.mergetrivial"
)

// Config are the check's timings (ACTIONS_VERIFY_*) and the report link.
type Config struct {
	Agent string
	// SyncTimeout bounds the wait for the change to be live and rolled
	// out; the check goes on after it either way (default 15m).
	SyncTimeout time.Duration
	// Window is how long the workload must go without an OOM kill, and be
	// available, to count as fixed (default 10m).
	Window time.Duration
	// Interval is how often the cluster is read meanwhile (default 30s).
	Interval time.Duration
	// Watch bounds how long a workload that paged is watched for its
	// recovery, which resolves the page (default 24h).
	Watch time.Duration
	// LinkBase is where people open this agent's API (PAGE_LINK_BASE); the
	// page links the run's report under it.
	LinkBase string
	Now      func() time.Time
	Log      *zap.Logger
}

// Defaults of Config.
const (
	DefaultSyncTimeout = 15 * time.Minute
	DefaultWindow      = 10 * time.Minute
	DefaultInterval    = 30 * time.Second
	DefaultWatch       = 24 * time.Hour
)

func (c Config) withDefaults() Config {
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Watch <= 0 {
		c.Watch = DefaultWatch
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	c.LinkBase = strings.TrimRight(c.LinkBase, "/")
	return c
}

// Verifier runs one follow-up check per action, in the background.
type Verifier struct {
	cl  Cluster
	st  Checks
	esc Escalator
	cfg Config
	ctx context.Context
	wg  sync.WaitGroup
}

// New returns the verifier; its checks run until ctx ends. esc may page
// nothing (an Escalator without an incident API).
func New(ctx context.Context, cl Cluster, st Checks, esc Escalator, cfg Config) *Verifier {
	return &Verifier{cl: cl, st: st, esc: esc, cfg: cfg.withDefaults(), ctx: ctx}
}

// Follow starts the follow-up check of r, an action that was done, when it
// is one that changes production (a restart, a merge); others are ignored.
func (v *Verifier) Follow(r store.ActionRecord) {
	if v == nil || r.Outcome != store.ActionDone || (r.Action != ActionRestart && r.Action != ActionMerge) || r.Name == "" {
		return
	}
	v.wg.Go(func() { v.follow(v.ctx, r) })
}

// Wait returns when every check has ended (after ctx ended, promptly).
func (v *Verifier) Wait() { v.wg.Wait() }

// Key is the incident's correlation key for a workload: one incident per
// workload and container, whatever action failed on it.
func Key(r store.ActionRecord) string {
	return pager.WorkloadKey(r.Namespace, canonicalKind(r.Kind), r.Name, r.Container)
}

func canonicalKind(k string) string {
	switch strings.ToLower(k) {
	case "deployments", "deployment", "deploy":
		return "Deployment"
	case "statefulsets", "statefulset", "sts":
		return "StatefulSet"
	case "daemonsets", "daemonset", "ds":
		return "DaemonSet"
	}
	return k
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (v *Verifier) follow(ctx context.Context, r store.ActionRecord) {
	log := v.cfg.Log.With(zap.String("action_id", r.ID), zap.String("action", r.Action),
		zap.String("workload", r.Namespace+"/"+r.Kind+"/"+r.Name))
	live, note, gone := v.awaitLive(ctx, r)
	if ctx.Err() != nil {
		return
	}
	if gone {
		v.record(ctx, r, store.CheckUnknown, "the workload is gone; nothing to check", "")
		return
	}
	if !sleep(ctx, live.Add(v.cfg.Window).Sub(v.cfg.Now())) {
		return
	}
	h, err := v.cl.WorkloadHealth(ctx, r.Namespace, r.Kind, r.Name, r.Container, live)
	if err != nil {
		v.record(ctx, r, store.CheckUnknown, "the cluster could not be read: "+err.Error(), "")
		return
	}
	status, evidence := judge(h, v.cfg.Window)
	if note != "" {
		evidence = note + "; " + evidence
		if r.Action == ActionMerge && !h.LimitIs(r.New) {
			status = store.CheckNotFixed
		}
	}
	if status == store.CheckFixed {
		paged := v.resolve(ctx, r, "the action worked: "+evidence)
		v.record(ctx, r, status, evidence, paged)
		log.Info("follow-up check: fixed", zap.String("evidence", evidence))
		return
	}
	paged := v.page(ctx, r, h, evidence, live)
	v.record(ctx, r, status, evidence, paged)
	log.Warn("follow-up check: the action did not fix it", zap.String("evidence", evidence), zap.String("paged", paged))
	v.watch(ctx, r, live)
}

// awaitLive polls until the workload rolled out the change (for a merge:
// with the new limit live) or SyncTimeout passed; it returns when the
// change was live and, when it was not seen live, why.
func (v *Verifier) awaitLive(ctx context.Context, r store.ActionRecord) (time.Time, string, bool) {
	deadline := r.At.Add(v.cfg.SyncTimeout)
	for {
		h, err := v.cl.WorkloadHealth(ctx, r.Namespace, r.Kind, r.Name, r.Container, r.At)
		switch {
		case err == nil && h.Gone:
			return time.Time{}, "", true
		case err == nil && h.RolledOut && (r.Action != ActionMerge || h.LimitIs(r.New)):
			return v.cfg.Now(), "", false
		}
		if !v.cfg.Now().Before(deadline) {
			why := fmt.Sprintf("not rolled out %s after the action", v.cfg.SyncTimeout)
			switch {
			case err != nil:
				why = fmt.Sprintf("the cluster could not be read for %s (%v)", v.cfg.SyncTimeout, err)
			case r.Action == ActionMerge && !h.LimitIs(r.New):
				why = fmt.Sprintf("the merged limit %s is not live %s after the merge (the live spec says %s): the GitOps controller has not applied it",
					r.New, v.cfg.SyncTimeout, nonEmpty(h.MemoryLimit, "no limit"))
			}
			return v.cfg.Now(), why, false
		}
		if !sleep(ctx, v.cfg.Interval) {
			return time.Time{}, "", false
		}
	}
}

// judge says whether the workload is fixed: no OOM kill since the time
// asked about, and available.
func judge(h kube.Health, window time.Duration) (string, string) {
	avail := fmt.Sprintf("%d/%d replicas available", h.Ready, h.Replicas)
	if len(h.OOMKills) == 0 && h.Available {
		return store.CheckFixed, fmt.Sprintf("no OOM kill for %s and %s", window, avail)
	}
	var parts []string
	if n := len(h.OOMKills); n > 0 {
		parts = append(parts, fmt.Sprintf("%d OOM kill(s) since the change was live (newest: %s)", n, h.OOMKills[0]))
	}
	if !h.Available {
		parts = append(parts, "not available: "+avail)
	}
	return store.CheckNotFixed, strings.Join(parts, "; ")
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

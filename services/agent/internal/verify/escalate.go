package verify

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// page opens the workload's incident with the evidence and the report
// link; it answers what it did, for the check's record.
func (v *Verifier) page(ctx context.Context, r store.ActionRecord, h kube.Health, evidence string, live time.Time) string {
	if v.esc == nil {
		return ""
	}
	what := describe(r)
	details := map[string]string{
		"action": what, "evidence": evidence, "agent": r.Agent, "run_id": r.RunID, "action_id": r.ID,
		"done_at": r.At.UTC().Format(time.RFC3339), "live_at": live.UTC().Format(time.RFC3339),
		"available": fmt.Sprintf("%d/%d", h.Ready, h.Replicas),
	}
	if h.MemoryLimit != "" {
		details["memory_limit"] = h.MemoryLimit
	}
	for i, k := range h.OOMKills {
		if i == 5 {
			break
		}
		details[fmt.Sprintf("oom_kill_%d", i+1)] = k
	}
	link := v.link(r)
	if link == "" && r.RunID != "" {
		details["report"] = fmt.Sprintf("GET /runs/%s/report on agent %s", r.RunID, r.Agent)
	}
	inc := pager.Incident{Key: Key(r), Severity: pager.SeverityCritical,
		Summary: fmt.Sprintf("kubecrew: %s did not fix %s/%s/%s — %s; a human is needed", what, r.Namespace, canonicalKind(r.Kind), r.Name, evidence),
		Source:  fmt.Sprintf("%s/%s/%s", r.Namespace, canonicalKind(r.Kind), r.Name), Component: r.Container,
		Group: r.Namespace, Class: "action-not-effective", Details: details, Link: link, At: v.cfg.Now()}
	res, err := v.esc.Page(ctx, inc, "action "+r.ID)
	if err != nil {
		v.cfg.Log.Error("paging a human failed", zap.String("key", inc.Key), zap.Error(err))
		return "failed: " + err.Error()
	}
	if res == pager.Off {
		return ""
	}
	return res
}

// resolve closes the workload's incident, if one is open.
func (v *Verifier) resolve(ctx context.Context, r store.ActionRecord, note string) string {
	if v.esc == nil {
		return ""
	}
	res, err := v.esc.Resolve(ctx, Key(r), note)
	switch {
	case err != nil:
		v.cfg.Log.Error("resolving a page failed", zap.String("key", Key(r)), zap.Error(err))
		return "failed: " + err.Error()
	case res == pager.Resolved:
		return pager.Resolved
	}
	return ""
}

// watch follows a workload whose action did not fix it until it has gone a
// whole window without an OOM kill and is available — then the page is
// resolved — or until Watch has passed.
func (v *Verifier) watch(ctx context.Context, r store.ActionRecord, since time.Time) {
	end := since.Add(v.cfg.Watch)
	for v.cfg.Now().Before(end) {
		if !sleep(ctx, v.cfg.Interval) {
			return
		}
		from := v.cfg.Now().Add(-v.cfg.Window)
		if from.Before(since) {
			continue // not a whole window since the failed check yet
		}
		h, err := v.cl.WorkloadHealth(ctx, r.Namespace, r.Kind, r.Name, r.Container, from)
		if err != nil {
			continue
		}
		if h.Gone {
			v.record(ctx, r, store.CheckUnknown, "the workload is gone; the page stays open for a human", "")
			return
		}
		if status, evidence := judge(h, v.cfg.Window); status == store.CheckFixed {
			evidence = "recovered: " + evidence
			v.record(ctx, r, status, evidence, v.resolve(ctx, r, evidence))
			return
		}
	}
	if ctx.Err() == nil {
		v.record(ctx, r, store.CheckUnknown, fmt.Sprintf("still not fixed after %s of watching; the page stays open for a human", v.cfg.Watch), "")
	}
}

func (v *Verifier) record(ctx context.Context, r store.ActionRecord, status, detail, paged string) {
	c := store.ActionCheck{ActionID: r.ID, Agent: nonEmpty(v.cfg.Agent, r.Agent), Namespace: r.Namespace, Kind: r.Kind, Name: r.Name,
		Container: r.Container, Status: status, Detail: detail, Paged: paged, At: v.cfg.Now()}
	if status != store.CheckFixed || paged != "" {
		c.PageKey = Key(r)
	}
	if err := v.st.RecordCheck(context.WithoutCancel(ctx), c); err != nil {
		v.cfg.Log.Warn("follow-up check not recorded", zap.String("action_id", r.ID), zap.Error(err))
	}
}

func (v *Verifier) link(r store.ActionRecord) string {
	if v.cfg.LinkBase == "" || r.RunID == "" {
		return ""
	}
	return v.cfg.LinkBase + "/runs/" + r.RunID + "/report"
}

func describe(r store.ActionRecord) string {
	switch r.Action {
	case ActionMerge:
		if r.Old != "" || r.New != "" {
			return fmt.Sprintf("the merged memory bump (%s → %s)", r.Old, r.New)
		}
		return "the merged memory bump"
	case ActionRestart:
		return "the rollout restart"
	}
	return r.Action
}

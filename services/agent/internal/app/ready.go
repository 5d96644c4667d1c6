package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/readiness"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Dependencies /ready reports; READY_REQUIRE picks which must be usable
// (docs/MANUAL.md "Readiness").
const (
	depCluster = "cluster"
	depStore   = "store"
	depModel   = "model"
	depGitOps  = "gitops"
)

// probeTTL bounds how often /ready asks the API server and the model
// endpoint (a kubelet probes every few seconds).
const probeTTL = 20 * time.Second

// readyChecks builds /ready's checks for the resolved tool set.
func (a *App) readyChecks(set tools.Set, model *llm.Client) ([]readiness.Check, error) {
	require, err := readiness.ParseRequire(strings.Join(a.Config.ReadyRequire, ","), []string{depCluster, depStore, depModel, depGitOps})
	if err != nil {
		return nil, a.Config.Fail("READY_REQUIRE", err.Error())
	}
	var names []string
	for _, s := range set.Specs() {
		names = append(names, s.Name)
	}
	return []readiness.Check{
		{Name: depStore, Required: require[depStore], Probe: storeProbe(a.Store)},
		{Name: depModel, Required: require[depModel], Probe: readiness.Cached(probeTTL, modelProbe(model))},
		{Name: depCluster, Required: require[depCluster], Probe: readiness.Cached(probeTTL, clusterProbe(a.Kube, kube.NeedsOf(names)))},
		{Name: depGitOps, Required: require[depGitOps], Probe: func(context.Context) readiness.Result {
			if !a.forgeOK {
				return readiness.Result{State: "not configured (GITOPS_FORGE, GITOPS_REPO)"}
			}
			return readiness.Result{State: "ok"}
		}},
		a.mcpReady(),
	}, nil
}

// storeProbe: an in-memory store (no DATABASE_URL) and Postgres are usable.
// A DATABASE_URL Postgres refused (no such database, wrong credentials or
// permissions) is not: no retry fixes it. An outage keeps the agent ready,
// serving from memory and writing through when Postgres is back.
func storeProbe(st store.AgentStore) func(context.Context) readiness.Result {
	return func(ctx context.Context) readiness.Result {
		sw, ok := st.(*store.Switch)
		if !ok {
			return readiness.Result{State: st.Kind(), Err: st.Ping(ctx)}
		}
		err := sw.Usable()
		if err != nil && store.Refused(err) {
			return readiness.Result{State: sw.State(), Err: fmt.Errorf("DATABASE_URL is refused by Postgres (serving from memory until it is fixed): %w", err)}
		}
		return readiness.Result{State: sw.State()}
	}
}

// modelProbe asks each configured endpoint for its model list: unusable
// when none answers.
func modelProbe(c *llm.Client) func(context.Context) readiness.Result {
	return func(ctx context.Context) readiness.Result {
		if c == nil {
			return readiness.Result{State: "none"}
		}
		res := c.Probe(ctx, 0)
		var ok, bad []string
		for _, r := range res {
			if r.OK {
				ok = append(ok, r.Endpoint)
			} else {
				bad = append(bad, r.Error)
			}
		}
		out := readiness.Result{Detail: res}
		switch {
		case len(ok) == 0:
			out.Err = errors.New(strings.Join(bad, "; "))
		case len(bad) > 0:
			out.State = fmt.Sprintf("degraded: %s; answering: %s", strings.Join(bad, "; "), strings.Join(ok, ", "))
		default:
			out.State = c.Model() + " ok"
		}
		return out
	}
}

// clusterAccess is /ready's detail for the cluster: who the agent is and
// what it may do.
type clusterAccess struct {
	Identity string       `json:"identity,omitempty"`
	Access   []kube.Grant `json:"access"`
}

// clusterProbe: the API server answers, and the agent's own identity may
// do everything its tools need (one SelfSubjectAccessReview each).
func clusterProbe(kc *kube.Client, needs []kube.Need) func(context.Context) readiness.Result {
	return func(ctx context.Context) readiness.Result {
		if len(needs) == 0 {
			return readiness.Result{State: "not used (no cluster tools)"}
		}
		if err := kc.Ready(ctx); err != nil {
			return readiness.Result{Err: err}
		}
		grants, err := kc.CheckAccess(ctx, needs)
		if err != nil {
			return readiness.Result{Err: fmt.Errorf("asking the API server what this identity may do: %w", err)}
		}
		d := clusterAccess{Identity: kc.WhoAmI(ctx), Access: grants}
		if denied := kube.Denied(grants); denied != "" {
			who := d.Identity
			if who == "" {
				who = "this identity"
			}
			return readiness.Result{Detail: d, Err: fmt.Errorf("forbidden: %s", strings.Replace(denied, "this identity", who, 1))}
		}
		return readiness.Result{State: fmt.Sprintf("ok (%d permissions checked)", len(grants)), Detail: d}
	}
}

package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

// TestTwoClustersBehindOneCore: the same alert fired in two clusters (one
// without a cluster label: the default cluster) is two incidents, two
// investigations, each sent to its own cluster's agent; an alert of a
// cluster without agents is ignored, saying so.
func TestTwoClustersBehindOneCore(t *testing.T) {
	t.Parallel()
	eu := agenttest.New(t, "platform-sre")
	c := newCore(t, coreOpts{quiet: true, peers: map[string]string{"eu-west/platform-sre": eu.URL()},
		env: map[string]string{"DEFAULT_CLUSTER": "us-east"}})
	inCluster := func(cluster string) map[string]any {
		a := podAlert("KubePodCrashLooping", "shop", podName("api", 1), "", "critical")
		a["fingerprint"] = "same-fingerprint"
		if cluster != "" {
			a["labels"].(map[string]string)["cluster"] = cluster
		}
		return a
	}
	const gk = `{}:{namespace="shop"}`
	home := postGroup(t, c.URL, gk, inCluster(""))
	away := postGroup(t, c.URL, gk, inCluster("eu-west"))
	named := postGroup(t, c.URL, gk, inCluster("us-east"))
	unknown := postGroup(t, c.URL, gk, inCluster("ap-south"))
	if home.Decisions[0].Decision != "dispatched" || away.Decisions[0].Decision != "dispatched" ||
		home.Decisions[0].InvestigationID == away.Decisions[0].InvestigationID {
		t.Fatalf("home %+v, away %+v: want two investigations", home, away)
	}
	if d := named.Decisions[0].Decision; d != "deduped" && d != "cooldown" {
		t.Fatalf("an alert labelled with DEFAULT_CLUSTER: %+v, want the home incident's (deduped or cooldown)", named)
	}
	if d := unknown.Decisions[0]; d.Decision != "ignored" || !strings.Contains(d.Reason, `cluster "ap-south" has no agents`) {
		t.Fatalf("alert of a cluster without agents: %+v", d)
	}
	waitFor(t, 10*time.Second, "both investigations", func() bool {
		c.WaitIdle()
		return len(c.Agent.Runs()) == 1 && len(eu.Runs()) == 1
	})
	h, e := c.Agent.Runs()[0].Request.Context, eu.Runs()[0].Request.Context
	if h["correlation_key"] != "shop/Deployment/api" || h["cluster"] != "" ||
		e["correlation_key"] != "eu-west/shop/Deployment/api" || e["cluster"] != "eu-west" {
		t.Fatalf("home context %v\neu-west context %v", h, e)
	}
	invs := investigations(t, c)
	agents := map[string]string{}
	for _, i := range invs {
		agents[i.Fingerprint] = i.Agent
	}
	if agents["shop/Deployment/api"] != "platform-sre" || agents["eu-west/shop/Deployment/api"] != "eu-west/platform-sre" {
		t.Fatalf("investigations by incident → agent: %v", agents)
	}
}

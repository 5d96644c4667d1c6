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

// TestLostNodeStaysInItsCluster: a node lost in one cluster gathers that
// cluster's pods on it, not another cluster's pods on a node of the same
// name (node names such as ip-10-0-1-5 repeat across clusters).
func TestLostNodeStaysInItsCluster(t *testing.T) {
	t.Parallel()
	eu := agenttest.New(t, "platform-sre")
	c := newCore(t, coreOpts{quiet: true, peers: map[string]string{"eu-west/platform-sre": eu.URL()}})
	// Both agents hold their runs: the node's investigation is still in
	// flight when its pods arrive, and the home cluster's slot stays taken.
	euGate, homeGate := eu.Gate(), c.Agent.Gate()
	defer close(euGate)
	defer close(homeGate)
	node := alert("eu-node7-notready", "KubeNodeNotReady", "monitoring", "firing")
	node["labels"].(map[string]string)["node"] = "node-7"
	node["labels"].(map[string]string)["cluster"] = "eu-west"
	if n := count(postGroup(t, c.URL, `{}:{alertname="KubeNodeNotReady"}`, node)); n["dispatched"] != 1 {
		t.Fatalf("eu-west node alert: %v", n)
	}
	euPod := podAlert("KubePodNotReady", "shop", podName("web", 1), "node-7", "warning")
	euPod["labels"].(map[string]string)["cluster"] = "eu-west"
	if a := postGroup(t, c.URL, `{}:{namespace="shop"}`, euPod); a.Decisions[0].Decision != "joined" ||
		!strings.Contains(a.Decisions[0].Reason, "incident eu-west/node/node-7") {
		t.Fatalf("eu-west pod on the lost node: %+v, want joined to eu-west/node/node-7", a.Decisions[0])
	}
	// Two pods of two Deployments on the home cluster's node-7, which is
	// not lost: two incidents keyed by their owners (the second queued
	// behind the first), not one node incident.
	home := postGroup(t, c.URL, `{}:{namespace="shop"}`,
		podAlert("KubePodNotReady", "shop", podName("web", 2), "node-7", "warning"),
		podAlert("KubePodNotReady", "shop", podName("worker", 2), "node-7", "warning"))
	if n := count(home); n["dispatched"] != 1 || n["busy"] != 1 {
		t.Fatalf("home cluster's pods on its own node-7: %+v, want two incidents (dispatched, busy)", home.Decisions)
	}
}

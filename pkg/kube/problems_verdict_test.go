package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// A sweep whose checks could not run never says healthy.

func TestVerdictForbiddenEverywhereIsUnknown(t *testing.T) {
	t.Parallel()
	c, cs := brokenClient(t)
	cs.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "",
			errNoRBAC(a.GetResource().Resource))
	})
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != VerdictUnknown || r.Healthy() || len(r.Coverage.ChecksRun) != 0 {
		t.Errorf("verdict %s, checks run %v", r.Verdict(), r.Coverage.ChecksRun)
	}
	out := r.Render()
	if !strings.HasPrefix(out, "VERDICT UNKNOWN: nothing could be checked") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], `forbidden for User "system:serviceaccount:kubecrew:noor": `) {
		t.Errorf("render does not say so first:\n%s", out)
	}
}

type rbacErr string

func (e rbacErr) Error() string { return string(e) }

func errNoRBAC(resource string) error {
	return rbacErr(`User "system:serviceaccount:kubecrew:noor" cannot list resource "` + resource + `" at the cluster scope`)
}

func TestVerdictOneListForbiddenIsPartial(t *testing.T) {
	t.Parallel()
	h := newHand("acme", "", testNow)
	h.deploy("ok", 1, 1)
	h.pod("ok-rs-1", "ok", "ReplicaSet", "ok-rs", ready)
	c, cs := fakeClient(t, h.o.All()...)
	cs.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errNoRBAC("events"))
	})
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != VerdictPartial {
		t.Errorf("verdict %s, want partial", r.Verdict())
	}
	if out := r.Render(); !strings.HasPrefix(out, "VERDICT PARTIAL: ") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], `forbidden for User "system:serviceaccount:kubecrew:noor": events`) {
		t.Errorf("render:\n%s", out)
	}
}

func TestVerdictMissingNamespaceIsUnknown(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: "does-not-exist"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != VerdictUnknown || r.Coverage.Missing != "namespace does-not-exist does not exist" {
		t.Errorf("verdict %s, missing %q", r.Verdict(), r.Coverage.Missing)
	}
	if out := r.Render(); !strings.HasPrefix(out, "VERDICT UNKNOWN: ") || !strings.Contains(out, "namespace does-not-exist does not exist") {
		t.Errorf("render:\n%s", out)
	}
	// the namespace exists: a sweep of it is complete
	c2, _ := brokenClient(t)
	if r, _ := c2.ClusterProblems(context.Background(), ProblemOptions{Namespace: fixtureNS}); r.Verdict() != VerdictIssuesFound {
		t.Errorf("existing namespace: verdict %s", r.Verdict())
	}
}

// TestVerdict404Server: a kubeconfig whose server answers 404 for every
// path (a wrong URL behind a proxy) is "unknown", never healthy.
func TestVerdict404Server(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 page not found\n"))
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + srv.URL + "}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(kc, "", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "shop"} {
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: ns, ListTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("ns %q: %v", ns, err)
		}
		if r.Verdict() != VerdictUnknown || len(r.Coverage.ChecksRun) != 0 {
			t.Errorf("ns %q: verdict %s, checks run %v", ns, r.Verdict(), r.Coverage.ChecksRun)
		}
		if out := r.Render(); !strings.HasPrefix(out, "VERDICT UNKNOWN: ") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "not found: cronjobs, daemonsets, deployments") {
			t.Errorf("ns %q render:\n%s", ns, out)
		}
	}
}

func TestFocusAlertedObject(t *testing.T) {
	t.Parallel()
	h := newHand("acme", "", testNow)
	semCases[1].build(h) // ledger: OOM-killed 10 minutes ago, ready again
	h.warn("Pod", "ledger-rs-x", "BackOff", "Back-off restarting failed container main", 11*time.Minute)
	h.deploy("api", 1, 0)
	h.pod("api-rs-1", "api", "ReplicaSet", "api-rs", crashing("Error"))
	c, _ := fakeClient(t, h.o.All()...)
	cases := []struct {
		ref          ObjectRef
		state        string
		want         []string
		wantEvidence string
	}{
		{ObjectRef{"acme", "deployment", "ledger"}, "recovered", []string{"looks recovered now", "1/1 available"}, "OOMKilled (exit 137)"},
		{ObjectRef{"acme", "Pod", "ledger-rs-x"}, "recovered", []string{"looks recovered now"}, "Warning BackOff x3"},
		{ObjectRef{"acme", "Deployment", "api"}, "broken", []string{"broken now (acme/Deployment/api): critical CrashLoopBackOff"}, "1 pod(s)"},
		{ObjectRef{"acme", "Deployment", "gone"}, "missing", []string{"no Deployment gone exists now"}, ""},
		{ObjectRef{"nowhere", "Deployment", "api"}, "missing", []string{"namespace nowhere does not exist"}, ""},
	}
	for _, tc := range cases {
		ref := tc.ref
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{Focus: &ref})
		if err != nil {
			t.Fatal(err)
		}
		f := r.Focus
		if f == nil || f.State != tc.state {
			t.Errorf("%v: focus %+v, want %s", tc.ref, f, tc.state)
			continue
		}
		out := r.Render()
		line := strings.SplitN(out, "\n", 4)[2] // after the header and the scanned line
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%v: focus line %q lacks %q", tc.ref, line, w)
			}
		}
		if tc.wantEvidence != "" && !strings.Contains(strings.Join(f.Evidence, "\n"), tc.wantEvidence) {
			t.Errorf("%v: evidence %q lacks %q", tc.ref, f.Evidence, tc.wantEvidence)
		}
	}
}

// A List the API server throttles (429) or that outlasts ListTimeout is
// named as partial with why; what did answer is still reported.
func TestVerdictThrottledAndTimedOutListsArePartial(t *testing.T) {
	t.Parallel()
	c, cs := brokenClient(t)
	cs.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later", 1)
	})
	cs.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(300 * time.Millisecond) // the fake ignores the context: wait past the timeout, then fail as client-go would
		return true, nil, context.DeadlineExceeded
	})
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{ListTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, p := range r.Coverage.Partial {
		why[p.List] = p.Why
	}
	if !strings.Contains(why["events"], "too many requests") || !strings.Contains(why["services"], "timed out after 100ms") || len(why) != 2 {
		t.Errorf("partial = %+v", r.Coverage.Partial)
	}
	if r.Verdict() != VerdictIssuesFound || findProblem(r, fixtureNS, "Deployment", "oomkill", ReasonOOMKilled) == nil {
		t.Errorf("verdict %s; the pods that answered must still be judged", r.Verdict())
	}
	first := strings.SplitN(r.Render(), "\n", 2)[0]
	if !strings.HasPrefix(first, "PARTIAL CHECK: problems below, but not checked: unanswered (timed out, throttled or unreachable): events, services") {
		t.Errorf("first line %q", first)
	}
}

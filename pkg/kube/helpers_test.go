package kube

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// testNow is the fixed clock of every fake-clientset test.
var testNow = time.Date(2026, 7, 28, 9, 14, 2, 0, time.UTC)

const fixtureNS = "shop"

// fakeClient returns a Client over a fake clientset holding objs.
func fakeClient(t testing.TB, objs ...runtime.Object) (*Client, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	return New(cs, WithClock(func() time.Time { return testNow })), cs
}

// brokenClient returns a Client over the broken-workload fixtures in fixtureNS.
func brokenClient(t testing.TB, extra ...runtime.Object) (*Client, *fake.Clientset) {
	t.Helper()
	o, err := kubetest.BrokenObjects(fixtureNS, testNow)
	if err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	return fakeClient(t, append(o.All(), extra...)...)
}

// call runs the named tool of c through a tools.Set, as an agent would.
func call(ctx context.Context, c *Client, name string, args any) (string, string) {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	res := tools.Set(Tools(c)).Call(ctx, name, raw, 0)
	return res.Output, res.Outcome
}

func interactive() context.Context {
	return tools.WithMode(context.Background(), tools.ModeInteractive)
}

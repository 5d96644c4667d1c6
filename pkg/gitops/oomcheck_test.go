package gitops

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// fakeKills answers OOMKill with a fixed reading of the cluster.
type fakeKills struct {
	kill *api.OOMKill
	note string
	err  error
}

func (f fakeKills) OOMKill(context.Context, string, string, string, string) (*api.OOMKill, string, error) {
	return f.kill, f.note, f.err
}

// TestBumpPrecondition: a memory bump opens its PR only when the cluster,
// read right before it, shows the container OOM-killed at the limit the
// manifest holds now; the request's reason (text from a finding or an
// alert) changes nothing.
func TestBumpPrecondition(t *testing.T) {
	t.Parallel()
	src := readTestdata(t, "fixtures/broken-workloads.yaml") // oomkill/app: 32Mi
	forged := "OOMKilled at 32Mi 40 times (the alert says so)"
	cases := []struct {
		name   string
		kills  fakeKills
		opened bool
		want   string
	}{
		{"killed at the manifest's limit", fakeKills{kill: &api.OOMKill{Pod: "oomkill-1", Container: "app", Limit: "32Mi"}}, true, ""},
		{"same amount, other spelling", fakeKills{kill: &api.OOMKill{Pod: "oomkill-1", Container: "app", Limit: "33554432"}}, true, ""},
		{"no kill recorded", fakeKills{note: "none of the 2 pods of Deployment x/oomkill records an OOM kill of container app"}, false,
			"needs container app OOM-killed, and the cluster shows: none of the 2 pods"},
		{"killed at another limit", fakeKills{kill: &api.OOMKill{Pod: "oomkill-1", Container: "app", Limit: "16Mi"}}, false,
			"OOM-killed in pod oomkill-1 at limit 16Mi, but hack/fixtures/broken-workloads.yaml holds 32Mi now"},
		{"killed with no limit", fakeKills{kill: &api.OOMKill{Pod: "oomkill-1", Container: "app"}}, false, "with no memory limit"},
		{"cluster unreadable", fakeKills{err: errors.New("cluster_unavailable: no config")}, false, "needs the OOM kill read from the cluster first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _, clk := newLocalRepo(t, map[string][]byte{"hack/fixtures/broken-workloads.yaml": src})
			sol := NewService(l, "k8s-engineer", Options{Now: clk.Now, OOMKills: tc.kills})
			r, err := sol.ProposeMemoryBump(context.Background(), BumpRequest{Namespace: "kubecrew-fixtures", Kind: "Deployment",
				Name: "oomkill", Container: "app", Reason: forged})
			prs, lerr := l.ListPRs(context.Background(), StateOpen)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tc.opened {
				if err != nil || r.PR.Number == 0 || len(prs) != 1 {
					t.Fatalf("want a PR: %+v %v", r, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no PR was opened") {
				t.Errorf("err = %v, want ErrRefused with %q", err, tc.want)
			}
			if len(prs) != 0 {
				t.Errorf("%d PRs opened", len(prs))
			}
		})
	}
}

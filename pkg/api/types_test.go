package api_test

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestDeriveKeyIsStableAndBranchSafe(t *testing.T) {
	for _, tc := range []struct {
		f    api.Finding
		want string
	}{
		{api.Finding{Namespace: "kubecrew-fixtures", Kind: "Deployment", Name: "oomkill", Container: "app", Reason: "OOMKilled"},
			"kubecrew-fixtures-deployment-oomkill-app-oomkilled"},
		{api.Finding{Namespace: "shop", Kind: "Deployment", Name: "cart", Reason: "CrashLoopBackOff", Detail: "free text is not part of the key"},
			"shop-deployment-cart-crashloopbackoff"},
		{api.Finding{Namespace: "a/../b", Kind: "Pod", Name: "x y", Reason: "--weird__"}, "a-b-pod-x-y-weird"},
	} {
		if got := tc.f.DeriveKey(); got != tc.want {
			t.Errorf("DeriveKey(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	long := api.Finding{Namespace: string(make([]byte, 300)), Name: "n", Reason: "r"}
	if k := long.DeriveKey(); len(k) > 100 {
		t.Errorf("key of %d characters; branch names need it bounded", len(k))
	}
}

func TestSortFindingsBySeverityThenObject(t *testing.T) {
	in := []api.Finding{
		{Severity: "low", Name: "a"}, {Severity: "critical", Name: "z"}, {Severity: "HIGH", Name: "b"},
		{Severity: "critical", Name: "c"}, {Severity: "bogus", Name: "x"},
	}
	got := api.SortFindings(in)
	var names []string
	for _, f := range got {
		names = append(names, f.Name)
	}
	if want := "c z b a x"; strings.Join(names, " ") != want {
		t.Errorf("order = %s, want %s", strings.Join(names, " "), want)
	}
	if in[0].Name != "a" {
		t.Error("SortFindings changed its input")
	}
	if !api.Autonomous("") || !api.Autonomous("alert") || api.Autonomous(api.WorkflowManual) {
		t.Error("only manual runs are interactive; unknown types fail closed")
	}
}

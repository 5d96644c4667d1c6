package app_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// TestSolActsOnlyOnWhatTheClusterShows: Sol's playbook is delegated
// findings that say an action is justified — a crash loop whose finding
// claims a ConfigMap written after its pods started, an OOM kill of a
// container the cluster shows was never killed. Each primitive reads the
// cluster right before its write and refuses: the Deployment on the API
// server is not patched, no PR is opened, and the verdict is refused with
// what the cluster shows. The legitimate cases act: a workload whose pods
// predate a real ConfigMap write is restarted, and the fixtures' real OOM
// kill at the manifest's limit gets its PR.
func TestSolActsOnlyOnWhatTheClusterShows(t *testing.T) {
	env := kubetest.Start(t)
	ctx := t.Context()
	ns := fmt.Sprintf("kc-precond-%d", rand.IntN(1_000_000_000))
	if err := env.LoadFixtures(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := kubetest.CreateRestartable(ctx, env.Clientset, ns, "web", nil); err != nil {
		t.Fatal(err)
	}
	repo := fixturesRepo(t)
	refs := func() string {
		out, err := exec.Command("git", "-C", repo, "for-each-ref").CombinedOutput()
		if err != nil {
			t.Fatalf("%v %s", err, out)
		}
		return string(out)
	}
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "KUBECONFIG": env.Kubeconfig, "GITOPS_FORGE": "local", "GITOPS_REPO": repo,
		"ACTIONS_NAMESPACES": ns})
	at := time.Now().UTC().Truncate(time.Second)
	claim := &api.ConfigChange{Kind: "ConfigMap", Name: "crashloop-config", ChangedAt: at, PodsStartedAt: at.Add(-time.Hour)}
	restartedAt := func(name string) string {
		d, err := env.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[kube.RestartAnnotation]
	}
	for _, tc := range []struct {
		name    string
		finding api.Finding
		verdict string
		says    string
		pr      bool
	}{
		{"a crash loop the finding says changed config", api.Finding{Kind: "Deployment", Name: "crashloop", Container: "app", Reason: "CrashLoopBackOff",
			Detail: "ConfigMap crashloop-config written after the pods started", ConfigChange: claim}, api.VerdictRefused, kube.ErrPrecondition.Error(), false},
		{"an OOM kill the cluster never saw", api.Finding{Kind: "Deployment", Name: "crashloop", Container: "app", Reason: "OOMKilled",
			Detail: "OOMKilled 40 times at 64Mi"}, api.VerdictRefused, "needs container app OOM-killed, and the cluster shows: none of the", false},
		{"pods that predate a real ConfigMap write", api.Finding{Kind: "Deployment", Name: "web", Container: "app", Reason: "CrashLoopBackOff",
			ConfigChange: &api.ConfigChange{Kind: "ConfigMap", Name: "web-config", ChangedAt: at, PodsStartedAt: at.Add(-time.Hour)}},
			api.VerdictActionTaken, "Evidence, read from the cluster right before the write: ConfigMap web-config", false},
		{"a real OOM kill at the manifest's limit", api.Finding{Kind: "Deployment", Name: "oomkill", Container: "app", Reason: "OOMKilled",
			Detail: "OOMKilled"}, api.VerdictActionTaken, "Opened PR #", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.finding
			f.Severity, f.Namespace, f.Remediable, f.Confidence = "critical", ns, true, 1
			raw, _ := json.Marshal(f)
			body, _ := json.Marshal(api.RunRequest{Task: "fix this finding", WorkflowType: api.WorkflowA2ADelegate,
				Context: map[string]string{"finding": string(raw)}})
			before, annotated := refs(), restartedAt(f.Name)
			code, b := do(t, "POST", a.url+"/run", string(body))
			var res api.RunResult
			if err := json.Unmarshal(b, &res); code != 200 || err != nil {
				t.Fatalf("POST /run = %d %s", code, b)
			}
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %s", res.Verdict, tc.verdict, res.Answer)
			}
			if tc.says != "" && !strings.Contains(res.Answer, tc.says) {
				var trace strings.Builder
				for _, ev := range traceOf(t, a.url, res.RunID, "tool_result") {
					fmt.Fprintf(&trace, "%v\n", ev)
				}
				if !strings.Contains(trace.String(), tc.says) {
					t.Errorf("neither the answer nor the trace says %q:\n%s\n%s", tc.says, res.Answer, trace.String())
				}
			}
			restarted := restartedAt(f.Name) != annotated
			if want := tc.verdict == api.VerdictActionTaken && !tc.pr; restarted != want {
				t.Errorf("restarted = %v, want %v", restarted, want)
			}
			if opened := refs() != before; opened != tc.pr {
				t.Errorf("forge changed = %v, want %v", opened, tc.pr)
			}
		})
	}
}

package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

func scan(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, handled := Run(context.Background(), append([]string{"scan"}, args...), Env{Stdout: &out, Stderr: &errOut})
	if !handled {
		t.Fatal("scan not handled")
	}
	return code, out.String(), errOut.String()
}

// Bad flags and a cluster that cannot be reached exit 2 and say why; no
// report is printed.
func TestScanErrors(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there any more
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kc, downURL)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad output", []string{"--output", "xml"}, `--output "xml" is not text or json`},
		{"bad severity", []string{"--fail-on", "urgent"}, `--fail-on "urgent" is not one of critical, high, medium, low`},
		{"stray argument", []string{"default"}, `unexpected argument "default"`},
		{"unknown flag", []string{"--namespaces", "x"}, "flag provided but not defined: -namespaces"},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(dir, "nope")}, filepath.Join(dir, "nope")},
		{"server down", []string{"--kubeconfig", kc}, "cluster_unavailable"},
		{"bad namespace", []string{"--kubeconfig", kc, "--namespace", "Bad_NS"}, "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := scan(t, tc.args...)
			if code != ExitError {
				t.Errorf("exit %d, want 2; stderr %s", code, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q lacks %q", errOut, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
	if code, _, errOut := scan(t, "--help"); code != ExitClean || !strings.Contains(errOut, "--fail-on") {
		t.Errorf("--help = %d %q", code, errOut)
	}
}

func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// scan on the real API server: the broken-workload fixtures fail it at the
// default threshold; a namespace whose only problem is a Service selecting
// nothing (medium) passes at high and fails at medium; an empty namespace
// passes; a namespace that does not exist is an error, not a pass.
func TestScanOnTheAPIServer(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	sfx := rand.IntN(1_000_000)
	broken := fmt.Sprintf("kc-scan-broken-%d", sfx)
	if err := env.LoadFixtures(ctx, broken); err != nil {
		t.Fatal(err)
	}
	orphan := fmt.Sprintf("kc-scan-orphan-%d", sfx)
	empty := fmt.Sprintf("kc-scan-empty-%d", sfx)
	for _, ns := range []string{orphan, empty} {
		if _, err := env.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "leftover", Namespace: orphan}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "gone"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := env.Clientset.CoreV1().Services(orphan).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + env.Kubeconfig
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		want     []string // in stdout
		wantErr  string   // in stderr
		findings []string // reasons, JSON output only
	}{
		{"broken fails at high", []string{kc, "--namespace", broken}, ExitFound,
			[]string{"OOMKilled", "CrashLoopBackOff", "ImagePullBackOff", "Unschedulable", "fail-on high: FAIL"}, "", nil},
		{"broken as JSON", []string{kc, "--namespace", broken, "--output", "json"}, ExitFound, nil, "",
			[]string{"CreateContainerConfigError", "CrashLoopBackOff", "ImagePullBackOff", "ProbeFailure", "Unschedulable", "OOMKilled"}},
		{"broken even at critical", []string{kc, "--namespace", broken, "--fail-on", "critical"}, ExitFound, []string{"FAIL"}, "", nil},
		{"medium passes at high", []string{kc, "--namespace", orphan}, ExitClean, []string{"ServiceSelectsNoPods", "fail-on high: ok"}, "", nil},
		{"medium fails at medium", []string{kc, "--namespace", orphan, "--fail-on", "MEDIUM"}, ExitFound, []string{"fail-on medium: FAIL"}, "", nil},
		{"medium fails at low", []string{kc, "--namespace", orphan, "--fail-on", "low", "--output", "json"}, ExitFound, nil, "", []string{"ServiceSelectsNoPods"}},
		{"empty namespace passes", []string{kc, "--namespace", empty, "--fail-on", "low"}, ExitClean, []string{"healthy", "fail-on low: ok"}, "", nil},
		{"missing namespace is an error", []string{kc, "--namespace", "kc-scan-missing-" + fmt.Sprint(sfx)}, ExitError,
			[]string{"does not exist"}, "could not check everything", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := scan(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.wantErr != "" && !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if tc.findings == nil {
				return
			}
			var res ScanResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			got := map[string]bool{}
			for _, f := range res.Findings {
				if f.Namespace != "" && !strings.HasPrefix(f.Namespace, "kc-scan-") {
					t.Errorf("finding outside the namespace: %+v", f)
				}
				got[f.Reason] = true
			}
			for _, r := range tc.findings {
				if !got[r] {
					t.Errorf("findings lack %s: %+v", r, res.Findings)
				}
			}
			if !res.Failed || res.Verdict != "issues_found" || len(res.ChecksRun) == 0 {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

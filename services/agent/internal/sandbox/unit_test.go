package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// Alertmanager's own fingerprints, from bodies it sent (shared samples).
func TestFingerprintMatchesAlertmanager(t *testing.T) {
	t.Parallel()
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod", "pod": "api-1", "severity": "critical"}, "9f5acf3bffd528ce"},
		{map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod", "pod": "api-2", "severity": "critical"}, "9137173028220f71"},
	}
	for _, tt := range tests {
		if got := Fingerprint(tt.labels); got != tt.want {
			t.Errorf("Fingerprint(%v) = %s, want %s", tt.labels, got, tt.want)
		}
	}
}

// The alert body has the fields the core validates and Alertmanager sends.
func TestOOMAlertShape(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	raw, err := json.Marshal(OOMAlert("kubecrew-fixtures", "oomkill", "oomkill-abc-123", at))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version string `json:"version"`
		Status  string `json:"status"`
		Alerts  []struct {
			Status      string            `json:"status"`
			Labels      map[string]string `json:"labels"`
			StartsAt    time.Time         `json:"startsAt"`
			EndsAt      string            `json:"endsAt"`
			Fingerprint string            `json:"fingerprint"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != "4" || m.Status != "firing" || len(m.Alerts) != 1 {
		t.Fatalf("body = %s", raw)
	}
	a := m.Alerts[0]
	want := map[string]string{"alertname": "KubePodOOMKilled", "namespace": "kubecrew-fixtures", "deployment": "oomkill",
		"pod": "oomkill-abc-123", "container": "app", "severity": "critical"}
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if a.Status != "firing" || a.EndsAt != "0001-01-01T00:00:00Z" || !a.StartsAt.Equal(at) || a.Fingerprint != Fingerprint(a.Labels) {
		t.Errorf("alert = %+v", a)
	}
}

func TestChildEnv(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/usr/bin", "DATABASE_URL=postgres://x", "AGENT_TOOLS=k8s_rollout", "AUTH_TOKEN=s", "AUTH_DISABLED=true", "LLM_API_KEY=k",
		"KUBECONFIG=/home/me/.kube/config", "PERSONA_DIR=/tmp/p", "ROUTES_FILE=/tmp/r.yaml"}
	c := FleetConfig{Host: "127.0.0.1", Kubeconfig: "/run/kc", GitOpsRepo: "/run/gitops.git"}
	tests := []struct {
		name string
		cfg  FleetConfig
		m    Member
		want []string // exact KEY=VALUE present
		gone []string // keys absent
	}{
		{"noor in the sandbox", c, Member{"noor", "platform-sre", 8001},
			[]string{"PATH=/usr/bin", "LLM_API_KEY=k", "AGENT_PERSONA=noor", "LISTEN_ADDR=127.0.0.1:8001", "KUBECONFIG=/run/kc",
				"GITOPS_FORGE=local", "GITOPS_REPO=/run/gitops.git", "GITOPS_BRANCH=main", "PULSE_ENABLED=false", "AGENT_MODEL=none", "AGENT_PEERS=p",
				"AUTH_TOKEN=" + Token()}, // the fleet's token, never an inherited one
			[]string{"DATABASE_URL", "AGENT_TOOLS", "AUTH_DISABLED", "PERSONA_DIR", "ROUTES_FILE"}},
		{"sol read-only on the user's cluster", FleetConfig{Host: "127.0.0.1", Kubeconfig: "/home/me/.kube/config", ReadOnly: true},
			Member{"sol", "k8s-engineer", 8002},
			[]string{"AGENT_TOOLS=" + SolReadOnlyTools, "KUBECONFIG=/home/me/.kube/config"},
			[]string{"GITOPS_FORGE", "GITOPS_REPO"}},
		{"noor read-only keeps its own tools", FleetConfig{Host: "127.0.0.1", Kubeconfig: "/k", ReadOnly: true},
			Member{"noor", "platform-sre", 8001}, nil, []string{"AGENT_TOOLS", "GITOPS_FORGE"}},
		{"a model endpoint is passed through", FleetConfig{Host: "127.0.0.1", LLMBaseURL: "http://gw:4000/v1"},
			Member{"vera", "code-reviewer", 8003}, []string{"LLM_BASE_URL=http://gw:4000/v1"}, []string{"AGENT_MODEL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := childEnv(base, AgentEnv(tt.cfg, tt.m, "p"))
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("missing %s in %v", w, env)
				}
			}
			for _, g := range tt.gone {
				for _, kv := range env {
					if strings.HasPrefix(kv, g+"=") {
						t.Errorf("%s must not be set: %v", g, env)
					}
				}
			}
			seen := map[string]bool{}
			for _, kv := range env {
				k, _, _ := strings.Cut(kv, "=")
				if seen[k] {
					t.Errorf("%s set twice: %v", k, env)
				}
				seen[k] = true
			}
		})
	}
	if !strings.Contains(SolReadOnlyTools, "k8s_get_resources") || strings.Contains(SolReadOnlyTools, "k8s_rollout") ||
		strings.Contains(SolReadOnlyTools, "bump_workload_memory") {
		t.Errorf("SolReadOnlyTools = %s", SolReadOnlyTools)
	}
}

func TestCountChangedAndLimitLine(t *testing.T) {
	t.Parallel()
	diff := "--- a/x.yaml\n+++ b/x.yaml\n@@ -1,3 +1,3 @@\n limits:\n-  memory: 32Mi\n+  memory: 48Mi\n ---\n"
	if p, m := gitops.CountChanged(diff); p != 1 || m != 1 {
		t.Errorf("countChanged = +%d/-%d, want +1/-1", p, m)
	}
	if got := limitLine("a: 1\n  memory: 48Mi\n", diff); got != "memory: 48Mi" {
		t.Errorf("limitLine = %q", got)
	}
	if got := limitLine("  memory: 32Mi\n", diff); !strings.Contains(got, "NOT on main") {
		t.Errorf("limitLine on an unmerged file = %q", got)
	}
}

func TestTimelineOrdersSteps(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	tl := NewTimeline(&b, func() time.Time { return base.Add(time.Hour) })
	tl.Add(base.Add(2*time.Second), []string{"detail"}, "second")
	tl.Add(base.Add(time.Second), nil, "first")
	tl.Add(base.Add(5*time.Second), nil, "later")
	tl.Flush(base.Add(3 * time.Second))
	want := "[12:00:01.000] first\n[12:00:02.000] second\n" + strings.Repeat(" ", 15) + "detail\n"
	if b.String() != want {
		t.Errorf("after Flush:\n%q\nwant\n%q", b.String(), want)
	}
	tl.FlushAll()
	if !strings.HasSuffix(b.String(), "[12:00:05.000] later\n") {
		t.Errorf("FlushAll did not print the rest: %q", b.String())
	}
}

// The sandbox loads the repository's fixture manifest; it must parse.
func TestFixtureManifestParses(t *testing.T) {
	t.Parallel()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deps, err := kubetest.ReadManifests(filepath.Join(root, kubetest.FixtureManifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != len(kubetest.Fixtures) {
		t.Errorf("%d Deployments, want %d", len(deps), len(kubetest.Fixtures))
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "testenv.sh")); err != nil {
		t.Errorf("hack/testenv.sh: %v", err)
	}
}

func TestParseTier(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"", DefaultTier, false},
		{"sim", TierSim, false},
		{" SIM ", TierSim, false},
		{"plain", TierAPI, false},
		{"api", TierAPI, false},
		{"kind", "", true},
	} {
		got, err := ParseTier(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseTier(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// Every broken fixture but unschedulable has a sim label, and each label
// selects a Stage in hack/kwok-stages.yaml.
func TestSimLabelsHaveStages(t *testing.T) {
	t.Parallel()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stages, err := os.ReadFile(filepath.Join(root, "hack", "kwok-stages.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range kubetest.Fixtures {
		l, ok := SimLabels[fx.Name]
		if want := fx.Reason != "" && fx.Name != "unschedulable"; ok != want {
			t.Errorf("%s: has sim label %v, want %v", fx.Name, ok, want)
			continue
		}
		if ok && !strings.Contains(string(stages), `.metadata.labels["`+l+`"]`) {
			t.Errorf("%s: no Stage in hack/kwok-stages.yaml selects label %s", fx.Name, l)
		}
	}
}

func TestSimMissing(t *testing.T) {
	t.Parallel()
	var all []kube.Problem
	for _, fx := range kubetest.Fixtures {
		if fx.Reason != "" {
			all = append(all, kube.Problem{Kind: "Deployment", Name: fx.Name, Reason: fx.Reason})
		}
	}
	for _, tc := range []struct {
		name     string
		problems []kube.Problem
		want     string
	}{
		{"all six", all, ""},
		{"none yet", nil, "configerror CreateContainerConfigError,crashloop CrashLoopBackOff,imagepull ImagePullBackOff,notready ProbeFailure,unschedulable Unschedulable,oomkill OOMKilled"},
		{"healthy not ready yet", append(append([]kube.Problem(nil), all...), kube.Problem{Kind: "Deployment", Name: "healthy", Reason: "ReplicasUnavailable"}), "healthy: reported ReplicasUnavailable"},
		{"wrong reason", append(append([]kube.Problem(nil), all[1:]...), kube.Problem{Kind: "Deployment", Name: "configerror", Reason: "ReplicasUnavailable"}), "configerror CreateContainerConfigError"},
		{"pod, not deployment", append(append([]kube.Problem(nil), all[1:]...), kube.Problem{Kind: "Pod", Name: "configerror", Reason: "CreateContainerConfigError"}), "configerror CreateContainerConfigError"},
	} {
		if got := strings.Join(SimMissing(tc.problems), ","); got != tc.want {
			t.Errorf("%s: SimMissing = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A taken port is found before the cluster starts, and the error says how
// to pick others through make.
func TestTakenPortRefusedBeforeTheCluster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := l.Addr().(*net.TCPAddr).Port
	bin := t.TempDir()
	for _, b := range []string{"agent", "core"} {
		if err := os.WriteFile(filepath.Join(bin, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	ctx := context.Background()
	err = Run(ctx, ctx, Options{BinDir: bin, RunDir: t.TempDir(), CorePort: held, Tier: TierSim}, &out)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d is taken", held)) || !strings.Contains(err.Error(), "make run CORE_PORT=") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(out.String(), "sandbox") || strings.Contains(out.String(), "testenv") {
		t.Errorf("something started before the port check:\n%s", out.String())
	}
}

// make run passes its port settings on: make run CORE_PORT=9090 AGENT_PORT=9001.
func TestMakeRunTakesPorts(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	cmd := exec.Command("make", "-n", "run", "CORE_PORT=9090", "AGENT_PORT=9001")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "hack/run.sh -core-port=9090 -agent-port=9001") {
		t.Errorf("make -n run CORE_PORT=9090 AGENT_PORT=9001 does not pass the ports:\n%s", b)
	}
}

// The timeline never shows an unopenable file://…#pull/N link.
func TestLocalPRShownAsItsRepository(t *testing.T) {
	got := plainPRs("Opened PR #1: file:///tmp/kubecrew-run.x/gitops.git#pull/1\nbranch: agent/fix/k")
	if strings.Contains(got, "file://") || !strings.Contains(got, "Opened PR #1: /tmp/kubecrew-run.x/gitops.git (a local git repository") {
		t.Errorf("plainPRs = %q", got)
	}
}

package deployreview

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// memRepo is a repository in memory (path → content), listed like a
// forge: recursively, sorted.
type memRepo map[string]string

func (m memRepo) ListFiles(_ context.Context, dir string) ([]string, error) {
	var out []string
	for p := range m {
		if dir == "" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (m memRepo) ReadFile(_ context.Context, p string) ([]byte, error) {
	s, ok := m[p]
	if !ok {
		return nil, errors.New("not found: " + p)
	}
	return []byte(s), nil
}

// checkFindings runs review over repo and wants exactly "RULE file:line"
// for each finding, sorted.
func checkFindings(t *testing.T, review func(context.Context, Repo, string) (*Report, error), repo memRepo, want []string) {
	t.Helper()
	rep, err := review(context.Background(), repo, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Rule+" "+f.Where())
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const goodDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 10001}
      containers:
      - name: app
        image: ghcr.io/example/web:1.4.2
        readinessProbe: {httpGet: {path: /ready, port: 8080}}
        livenessProbe: {httpGet: {path: /live, port: 8080}}
        resources:
          requests: {cpu: 50m, memory: 64Mi}
          limits: {memory: 128Mi}
`

// One table row per rule: the smallest file that breaks it, and exactly
// the file:line the rule must name (every other rule stays quiet).
func TestRulesFileLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule  string
		files memRepo
		want  []string
	}{
		{"DF001", memRepo{"svc/Dockerfile": "FROM golang:1.26 AS build\nRUN go build\n\nFROM alpine\nCOPY --from=build /x /x\nUSER 10001\n"},
			[]string{"DF001 svc/Dockerfile:4"}},
		{"DF001 latest, a registry port and a digest", memRepo{"Dockerfile": "FROM registry.local:5000/base\nFROM debian:latest\nFROM debian@sha256:" + strings.Repeat("a", 64) + "\nUSER 1\n"},
			[]string{"DF001 Dockerfile:1", "DF001 Dockerfile:2"}},
		{"DF002", memRepo{"Dockerfile": "FROM golang:1.26 AS build\nUSER 1000\nFROM debian:12\nCOPY --from=build /x /x\n"},
			[]string{"DF002 Dockerfile:3"}},
		{"DF002 USER root", memRepo{"Dockerfile": "FROM debian:12\nUSER 1000\nUSER root\n"}, []string{"DF002 Dockerfile:3"}},
		{"DF003", memRepo{"Dockerfile": "FROM debian:12\nADD https://example.com/tool.tgz /opt/\nADD ./local /opt/\nUSER 1\n"}, []string{"DF003 Dockerfile:2"}},
		{"DF004", memRepo{"Dockerfile": "FROM debian:12\nRUN apt-get update && \\\n    apt-get install -y curl\nRUN apt-get update && apt-get install -y git && rm -rf /var/lib/apt/lists/*\nRUN apk add curl\nRUN pip install --no-cache-dir x\nUSER 1\n"},
			[]string{"DF004 Dockerfile:2", "DF004 Dockerfile:5"}},
		{"DF005", memRepo{"Dockerfile": "FROM debian:12\nARG GITHUB_TOKEN\nARG NPM_TOKEN=abc123\nENV DB_PASSWORD=hunter2 LOG_LEVEL=info\nENV API_KEY $API_KEY\nUSER 1\n"},
			[]string{"DF005 Dockerfile:3", "DF005 Dockerfile:4"}},
		{"DF006", memRepo{"Dockerfile": "FROM debian:12\nEXPOSE 8080\nUSER 1\n"}, []string{"DF006 Dockerfile:2"}},
		{"KM001", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "ghcr.io/example/web:1.4.2", "ghcr.io/example/web:latest", 1)}, []string{"KM001 apps/web.yaml:13"}},
		{"KM002", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "          requests: {cpu: 50m, memory: 64Mi}\n", "", 1)}, []string{"KM002 apps/web.yaml:16"}},
		{"KM003 and KM004", memRepo{"apps/web.yaml": strings.Replace(strings.Replace(goodDeployment,
			"        readinessProbe: {httpGet: {path: /ready, port: 8080}}\n", "", 1), "        livenessProbe: {httpGet: {path: /live, port: 8080}}\n", "", 1)},
			[]string{"KM003 apps/web.yaml:12", "KM004 apps/web.yaml:12"}},
		{"KM005", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "        image:", "        securityContext:\n          privileged: true\n        image:", 1)}, []string{"KM005 apps/web.yaml:14"}},
		{"KM006", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "      securityContext: {runAsNonRoot: true, runAsUser: 10001}\n", "", 1)}, []string{"KM006 apps/web.yaml:11"}},
		{"KM006 UID 0", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "runAsNonRoot: true, runAsUser: 10001", "runAsUser: 0", 1)}, []string{"KM006 apps/web.yaml:10"}},
		{"KM007", memRepo{"apps/web.yaml": goodDeployment + "      volumes:\n      - name: docker\n        hostPath: {path: /var/run/docker.sock}\n"}, []string{"KM007 apps/web.yaml:21"}},
		{"KM008 and KM009", memRepo{"apps/web.yaml": strings.Replace(goodDeployment, "  replicas: 1\n", "  replicas: 3\n  strategy:\n    rollingUpdate: {maxUnavailable: 100%}\n", 1)},
			[]string{"KM008 apps/web.yaml:5", "KM009 apps/web.yaml:7"}},
		{"KM008 quiet with a PDB elsewhere in the repository", memRepo{
			"apps/web.yaml": strings.Replace(goodDeployment, "replicas: 1", "replicas: 3", 1),
			"apps/pdb.yaml": "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: shop}\nspec:\n  maxUnavailable: 1\n  selector: {matchLabels: {app: web}}\n"},
			nil},
		{"CI001", memRepo{".github/workflows/ci.yaml": "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n    - uses: actions/checkout@v4\n    - uses: docker/login-action@v3\n    - uses: aquasecurity/trivy-action@" + strings.Repeat("0", 40) + "\n    - uses: ./local-action\n"},
			[]string{"CI001 .github/workflows/ci.yaml:7"}},
		{"CI002", memRepo{".github/workflows/release.yml": "on: push\njobs:\n  release:\n    runs-on: ubuntu-latest\n    steps:\n    - run: |\n        make release\n        echo \"token=${{ secrets.REGISTRY_TOKEN }}\"\n    - run: 'curl -H \"Authorization: ${{ secrets.API }}\" https://x'\n"},
			[]string{"CI002 .github/workflows/release.yml:8"}},
		{"a sound deploy path", memRepo{"apps/web.yaml": goodDeployment, "Dockerfile": "FROM debian:12\nRUN apt-get update && apt-get install -y ca-certificates && rm -rf /var/lib/apt/lists/*\nUSER 65532\n"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			t.Parallel()
			checkFindings(t, Review, tc.files, tc.want)
		})
	}
}

// Every rule has a table row that proves it (a new rule needs its test):
// Dax's in review_test.go, Ada's in api_test.go.
func TestEveryRuleTested(t *testing.T) {
	t.Parallel()
	for file, rules := range map[string][]Rule{"review_test.go": Rules, "api_test.go": APIRules} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if !strings.Contains(string(src), `"`+r.ID+" ") {
				t.Errorf("rule %s has no file:line row in %s", r.ID, file)
			}
		}
	}
}

// The planted testdata repository renders to its golden report; the
// config file there switches DF006 off.
func TestReviewGolden(t *testing.T) {
	t.Parallel()
	repo := readRepo(t, filepath.Join("testdata", "repo"))
	rep, err := Review(context.Background(), repo, "")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "review.golden"), rep.Render())
	if len(rep.Disabled) != 1 || rep.Disabled[0] != "DF006" {
		t.Errorf("disabled = %v, want [DF006] from %s", rep.Disabled, ConfigPath)
	}
	sub, err := Review(context.Background(), repo, "apps/payments")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sub.Findings {
		if !strings.HasPrefix(f.File, "apps/payments/") {
			t.Errorf("a review of apps/payments reported %s", f.Where())
		}
	}
	if len(sub.Findings) == 0 || len(sub.Findings) >= len(rep.Findings) {
		t.Errorf("apps/payments: %d findings of %d", len(sub.Findings), len(rep.Findings))
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, err string }{
		{"", "", ""},
		{"# nothing off\n", "", ""},
		{"disable: [DF006, km004]\n", "DF006,KM004", ""},
		{"disable:\n  - DF001\n  - NOPE\n", "", "line 3: unknown rule \"NOPE\""},
		{"disabled: [DF001]\n", "", "line 1: unknown key \"disabled\""},
		{"disable: DF001\n", "", "line 1: disable wants a list"},
		{"- DF001\n", "", "line 1: want a mapping"},
		{"disable: [\n", "", "bad .kubecrew/review.yaml"},
	}
	for _, tc := range tests {
		got, err := ParseConfig([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrConfig) {
				t.Errorf("ParseConfig(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		var ids []string
		for id := range got {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if err != nil || strings.Join(ids, ",") != tc.want {
			t.Errorf("ParseConfig(%q) = %v, %v; want %s", tc.in, ids, err, tc.want)
		}
	}
}

func FuzzReview(f *testing.F) {
	f.Add("FROM debian\nENV A=1 \\\n B=2\nUSER root\n", "kind: Deployment\nspec: {replicas: 3, template: {spec: {containers: [{name: a, image: x}]}}}\n", "jobs: {a: {steps: [{uses: a/b@c, run: 'echo ${{ secrets.X }}'}]}}\n")
	f.Fuzz(func(t *testing.T, docker, manifest, workflow string) {
		repo := memRepo{"Dockerfile": docker, "apps/x.yaml": manifest, ".github/workflows/w.yaml": workflow}
		rep, err := Review(context.Background(), repo, "")
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]int{"Dockerfile": strings.Count(docker, "\n") + 1, "apps/x.yaml": strings.Count(manifest, "\n") + 1,
			".github/workflows/w.yaml": strings.Count(workflow, "\n") + 1}
		for _, fd := range rep.Findings {
			if fd.Line < 1 || fd.Line > lines[fd.File] || fd.Fix == "" || fd.Severity == "" {
				t.Fatalf("finding out of its file or without fix/severity: %+v", fd)
			}
		}
	})
}

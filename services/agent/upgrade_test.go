package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/pkg/upgradetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/sandbox"
)

// upgradeToken is both versions' AUTH_TOKEN.
const upgradeToken = "upgrade-t0ken"

// send is req with the token.
func send(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+upgradeToken)
	return http.DefaultClient.Do(req)
}

// agentGet answers GET path on p: the status and the body.
func agentGet(t *testing.T, p *upgradetest.Process, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.Addr+path, nil)
	resp, err := send(req)
	if err != nil {
		t.Fatalf("GET %s on the %s agent: %v", path, p.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// review asks p's Ada for the API review of the GitOps repository: a run
// in code (no model) with a trace and findings, all in the store.
func review(t *testing.T, p *upgradetest.Process) api.RunResult {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.Addr+"/run", bytes.NewReader([]byte(`{"task":"Review the API design of the repository"}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := send(req)
	if err != nil {
		t.Fatalf("POST /run on the %s agent: %v", p.Name, err)
	}
	defer resp.Body.Close()
	var r api.RunResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /run on the %s agent: %d %v", p.Name, resp.StatusCode, err)
	}
	if r.RunID == "" || len(r.Findings) == 0 || (r.Status != "completed" && r.Status != "partial") {
		t.Fatalf("the %s agent's review: %s with %d findings (%s)\n%s", p.Name, r.Status, len(r.Findings), r.Error, p.Stderr())
	}
	return r
}

// trace is GET /runs/{id}/trace on p, decoded.
func trace(t *testing.T, p *upgradetest.Process, id string) []api.TraceEvent {
	t.Helper()
	code, body := agentGet(t, p, "/runs/"+id+"/trace")
	if code != http.StatusOK {
		t.Fatalf("GET /runs/%s/trace on the %s agent: %d %s", id, p.Name, code, body)
	}
	var out []api.TraceEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	for dec.More() {
		var ev api.TraceEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("the %s agent's trace of %s: %v", p.Name, id, err)
		}
		out = append(out, ev)
	}
	return out
}

// sameRuns fails unless p lists every run of want as it was answered and
// serves its trace as the agent that ran it did (traces: run id → trace).
func sameRuns(t *testing.T, p *upgradetest.Process, want []api.RunResult, traces map[string][]api.TraceEvent) {
	t.Helper()
	code, body := agentGet(t, p, fmt.Sprintf("/runs?limit=%d", 100))
	var page struct{ Items []api.RunResult }
	if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil {
		t.Fatalf("GET /runs on the %s agent: %d %v", p.Name, code, err)
	}
	listed := map[string]api.RunResult{}
	for _, r := range page.Items {
		listed[r.RunID] = r
	}
	for _, w := range want {
		got, ok := listed[w.RunID]
		if !ok || got.Status != w.Status || got.Verdict != w.Verdict || len(got.Findings) != len(w.Findings) {
			t.Errorf("the %s agent lists run %s as %s/%s with %d findings, want %s/%s with %d", p.Name, w.RunID,
				got.Status, got.Verdict, len(got.Findings), w.Status, w.Verdict, len(w.Findings))
		}
		if tr := trace(t, p, w.RunID); len(tr) == 0 || !reflect.DeepEqual(tr, traces[w.RunID]) {
			t.Errorf("the %s agent's trace of run %s: %d events, want the %d its agent served:\n%+v\n%+v", p.Name, w.RunID, len(tr), len(traces[w.RunID]), tr, traces[w.RunID])
		}
	}
}

// TestUpgradeSideBySide: the previous agent (hack/upgrade/previous, built
// from this repository's history) records runs on a schema; this version
// starts on it and migrates it while the old one serves; each lists the
// other's runs and serves their traces as their agent did, an old agent
// restarted on the migrated schema starts, and this version alone keeps
// everything (docs/ARCHITECTURE.md, "Upgrades").
func TestUpgradeSideBySide(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t, "ka")
	root := upgradetest.Root(t, ".")
	prev, err := upgradetest.Commit(root)
	if err != nil {
		t.Fatal(err)
	}
	oldBin := upgradetest.Build(t, root, prev, "services/agent")
	repo := filepath.Join(t.TempDir(), "gitops.git")
	files, err := sandbox.PlantedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := gitops.InitLocalRepo(repo, files); err != nil {
		t.Fatal(err)
	}
	// Ada reviews in code (git from PATH); no cluster (HOME has no
	// kubeconfig), no pulse.
	env := []string{"AGENT_PERSONA=ada", "AUTH_TOKEN=" + upgradeToken, "DATABASE_URL=" + url, "GITOPS_FORGE=local", "GITOPS_REPO=" + repo,
		"PULSE_ENABLED=false", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	start := func(name, bin string, extra ...string) *upgradetest.Process {
		p := upgradetest.Start(t, bin, append(env, extra...), "agent listening")
		p.Name = name
		return p
	}
	traces := map[string][]api.TraceEvent{}
	ran := func(p *upgradetest.Process, runs *[]api.RunResult) {
		r := review(t, p)
		traces[r.RunID] = trace(t, p, r.RunID)
		*runs = append(*runs, r)
	}

	var runs []api.RunResult
	old := start("old", oldBin)
	ran(old, &runs)
	oldVersion := upgradetest.SchemaVersion(t, url)

	cur := start("new", os.Args[0], asMain+"=1")
	if v, newest := upgradetest.SchemaVersion(t, url), upgradetest.NewestMigration(t, root); v != newest {
		t.Fatalf("after the new agent started the schema is at %d, want %d", v, newest)
	}
	t.Logf("the previous agent (%s) left schema version %d; this one migrated it to %d beside it", prev[:12], oldVersion, upgradetest.NewestMigration(t, root))
	ran(cur, &runs)
	ran(old, &runs)
	sameRuns(t, cur, runs, traces)
	sameRuns(t, old, runs, traces)

	// An old agent restarted on the migrated schema starts and serves.
	old.Stop(t)
	old = start("old", oldBin)
	ran(old, &runs)
	sameRuns(t, old, runs, traces)

	// The old one stops; this version alone keeps everything.
	old.Stop(t)
	ran(cur, &runs)
	sameRuns(t, cur, runs, traces)
}

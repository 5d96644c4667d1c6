package app_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// step is one webhook of a replay, as recorded in a golden file.
type step struct {
	Sample   string          `json:"sample"`
	Code     int             `json:"code"`
	Response json.RawMessage `json:"response"`
}

type replay struct {
	Steps          []step            `json:"steps"`
	Runs           []json.RawMessage `json:"runs"` // what the agent received
	Investigations json.RawMessage   `json:"investigations"`
	Decisions      json.RawMessage   `json:"decisions"`
}

// replaySamples posts the samples in order to a fresh core (one minute
// apart on its clock), waits for every investigation and returns what
// happened.
func replaySamples(t *testing.T, samples []string) replay {
	t.Helper()
	clk := newClock()
	c := newCore(t, coreOpts{clock: clk, ids: seqIDs("inv")})
	var r replay
	for _, s := range samples {
		body, err := os.ReadFile(filepath.Join("testdata", "alertmanager", s))
		if err != nil {
			t.Fatal(err)
		}
		// The agent answers only after the webhook is answered, so the
		// decisions do not depend on how fast an investigation finishes.
		gate := c.Agent.Gate()
		code, resp, _ := do(t, http.MethodPost, c.URL+"/api/v1/alerts", body)
		r.Steps = append(r.Steps, step{Sample: s, Code: code, Response: json.RawMessage(resp)})
		close(gate)
		c.WaitIdle()
		clk.Advance(time.Minute)
	}
	for _, call := range c.Agent.Runs() {
		req := call.Request
		// The budget depends on when the call was sent (budget_test.go
		// checks it); the golden file keeps the rest of the request.
		if req.BudgetMS <= 0 || req.BudgetMS > 9000 {
			t.Errorf("run request budget_ms = %d, want in (0, 9000] (AGENT_CALL_TIMEOUT 10s less its margin)", req.BudgetMS)
		}
		req.BudgetMS = 0
		b, _ := json.Marshal(req)
		r.Runs = append(r.Runs, b)
	}
	_, r.Investigations, _ = do(t, http.MethodGet, c.URL+"/api/v1/investigations", nil)
	_, r.Decisions, _ = do(t, http.MethodGet, c.URL+"/api/v1/alerts?limit=500", nil)
	return r
}

func checkGolden(t *testing.T, name string, got replay) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Re-indent the raw messages for a readable diff.
	var v any
	_ = json.Unmarshal(b, &v)
	b, _ = json.MarshalIndent(v, "", "  ")
	b = append(b, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs from golden %s (go test -run %s -update rewrites it):\n%s", name, path, t.Name(), diff(string(want), string(b)))
	}
}

func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 40; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "-"+x, "+"+y)
		}
	}
	return strings.Join(out, "\n")
}

// TestGoldenSamples replays every captured Alertmanager body alone, and
// each captured sequence in order, against the golden files.
func TestGoldenSamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "alertmanager", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := replaySamples(t, []string{filepath.Base(f)})
			for _, s := range got.Steps {
				if s.Code != http.StatusOK {
					t.Fatalf("%s answered %d: %s", s.Sample, s.Code, s.Response)
				}
			}
			checkGolden(t, name, got)
		})
	}
	sequences := map[string][]string{
		"seq-am025":            {"am025-01-firing-single.json", "am025-02-firing-two-alerts.json", "am025-03-partial-resolve.json", "am025-04-all-resolved-after-3x500.json"},
		"seq-am035":            {"am035-01-firing-two-alerts.json", "am035-00-repeat.json", "am035-02-partial-resolve.json", "am035-03-all-resolved-after-2x500.json"},
		"seq-am035-prom-chain": {"am035-prom-chain-firing.json", "am035-prom-chain-resolved.json"},
	}
	for name, seq := range sequences {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkGolden(t, name, replaySamples(t, seq))
		})
	}
}

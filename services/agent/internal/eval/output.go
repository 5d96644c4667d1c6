package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Summary is the whole run: every result and the totals. Its JSON is
// comparable across models and runs.
type Summary struct {
	Mode      string    `json:"mode"`
	Model     string    `json:"model"`
	StartedAt time.Time `json:"started_at"`
	Results   []Result  `json:"results"`
	Totals    Totals    `json:"totals"`
}

// Totals add the results up.
type Totals struct {
	Scenarios      int     `json:"scenarios"`
	Passed         int     `json:"passed"`
	Failed         int     `json:"failed"`
	KnownFailures  int     `json:"known_failures"`
	UnexpectedPass int     `json:"unexpected_passes"`
	PassRate       float64 `json:"pass_rate"` // passed / (scenarios − known failures)
	WallMS         int64   `json:"wall_ms"`
	Model          int     `json:"model_calls"`
	Tools          int     `json:"tool_calls"`
	Prompt         int     `json:"prompt_tokens"`
	Complete       int     `json:"completion_tokens"`
	// PassAtK: scenarios that passed at least once over their repeats.
	PassAtK int `json:"pass_at_k"`
}

// Add appends r and updates the totals.
func (s *Summary) Add(r Result) {
	s.Results = append(s.Results, r)
	t := Totals{}
	passed := map[string]bool{}
	names := map[string]bool{}
	for _, r := range s.Results {
		t.Scenarios++
		names[r.Scenario] = true
		switch r.Status {
		case "pass":
			t.Passed++
			passed[r.Scenario] = true
		case "known_failure":
			t.KnownFailures++
		case "unexpected_pass":
			t.UnexpectedPass++
		default:
			t.Failed++
		}
		t.WallMS += r.WallMS
		t.Model += r.Model
		t.Tools += r.Tools
		t.Prompt += r.Prompt
		t.Complete += r.Complete
	}
	t.PassAtK = len(passed)
	if d := t.Scenarios - t.KnownFailures; d > 0 {
		t.PassRate = float64(t.Passed) / float64(d)
	}
	s.Totals = t
}

// OK reports whether the run is green: every result passed or is a known
// failure still failing.
func (s *Summary) OK() bool {
	for _, r := range s.Results {
		if !r.OK() {
			return false
		}
	}
	return len(s.Results) > 0
}

// WriteJSON writes the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteMarkdown writes the table, the totals, and the failures with their
// report pages.
func (s *Summary) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "| scenario | mode | result | failed expectation | wall | model calls | tool calls | tokens (prompt/completion) | triage: model calls · tokens · wall |\n")
	fmt.Fprintf(w, "|---|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Results {
		name := r.Scenario
		if r.Attempt > 1 {
			name += fmt.Sprintf(" #%d", r.Attempt)
		}
		why := ""
		if len(r.Failed) > 0 {
			why = cell(r.Failed[0])
			if len(r.Failed) > 1 {
				why += fmt.Sprintf(" (+%d more)", len(r.Failed)-1)
			}
		}
		status := r.Status
		if r.Status == "known_failure" {
			status = "known failure: " + cell(r.Known)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.1fs | %d | %d | %d/%d | %s |\n", name, r.Mode, status, why,
			float64(r.WallMS)/1000, r.Model, r.Tools, r.Prompt, r.Complete, r.Triage.cell())
	}
	t := s.Totals
	fmt.Fprintf(w, "| **total** (%d) | %s | **%d passed, %d failed, %d known failures, %d unexpected passes (%.0f %%)** | | %.1fs | %d | %d | %d/%d | |\n",
		t.Scenarios, s.Mode, t.Passed, t.Failed, t.KnownFailures, t.UnexpectedPass, 100*t.PassRate, float64(t.WallMS)/1000, t.Model, t.Tools, t.Prompt, t.Complete)
	var failed []Result
	for _, r := range s.Results {
		if r.Status != "pass" {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Not passing\n\n")
	for _, r := range failed {
		fmt.Fprintf(w, "- **%s** (%s, %s)\n", r.Scenario, r.Mode, r.Status)
		for _, f := range r.Failed {
			fmt.Fprintf(w, "  - %s\n", cell(f))
		}
		for _, p := range r.Reports {
			fmt.Fprintf(w, "  - report: [%s](file://%s)\n", lastPath(p), p)
		}
	}
}

// cell is the triage's figures per alert run ("" without one).
func (t Triage) cell() string {
	if t.Runs == 0 {
		return ""
	}
	n := float64(t.Runs)
	return fmt.Sprintf("%.1f · %.0f/%.0f · %.1fs", float64(t.Model)/n, float64(t.Prompt)/n, float64(t.Complete)/n, float64(t.WallMS)/1000/n)
}

func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	return s
}

func lastPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/logging"
	"github.com/kubecrew/kubecrew/pkg/redact"
)

// Exit codes of scan.
const (
	ExitClean  = 0 // nothing at or above --fail-on
	ExitFound  = 1 // something at or above --fail-on
	ExitError  = 2 // bad flags, no cluster, or a sweep that could not check
	scanOutput = "text"
)

// scanMaxChars bounds the text report: larger than a tool answer (a person
// reads it, not a model), still bounded.
const scanMaxChars = 64000

// ScanResult is scan --output json.
type ScanResult struct {
	// Verdict is the sweep's: healthy, issues_found, partial or unknown.
	Verdict string `json:"verdict"`
	Scope   string `json:"scope"`
	FailOn  string `json:"fail_on"`
	// Failed: a finding at or above FailOn (exit 1).
	Failed bool `json:"failed"`
	// Counts per severity, every severity present.
	Counts   map[string]int `json:"counts"`
	Findings []api.Finding  `json:"findings"`
	// NotChecked says what the sweep could not check and why.
	NotChecked []string `json:"not_checked"`
	ChecksRun  []string `json:"checks_run"`
}

// Scan runs the deterministic diagnosis (cluster_problems of pkg/kube)
// once against the current kubeconfig and prints it. It returns 0 when
// nothing at or above --fail-on was found, 1 when something was, 2 on an
// error — including a sweep that could not claim anything (the namespace
// does not exist, or a list failed and nothing was found: "nothing found"
// is not "healthy" when something was not checked).
func Scan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ns := fs.String("namespace", "", "sweep only this namespace (default: the whole cluster)")
	output := fs.String("output", scanOutput, "text or json")
	failOn := fs.String("fail-on", api.SeverityHigh, "exit 1 when a finding is at least this severe: critical, high, medium or low")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig path (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	kubeContext := fs.String("context", "", "kubeconfig context (default: the current one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agent scan [--namespace N] [--output text|json] [--fail-on critical|high|medium|low] [--kubeconfig F] [--context C]")
		fmt.Fprintln(stderr, "Exit 0: nothing at or above --fail-on; 1: something is; 2: an error or a sweep that could not check.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitClean
		}
		return ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent scan: unexpected argument %q\n", fs.Arg(0))
		return ExitError
	}
	*failOn = strings.ToLower(strings.TrimSpace(*failOn))
	if !api.ValidSeverity(*failOn) {
		fmt.Fprintf(stderr, "agent scan: --fail-on %q is not one of critical, high, medium, low\n", *failOn)
		return ExitError
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "agent scan: --output %q is not text or json\n", *output)
		return ExitError
	}
	log := logging.New(stderr, logging.Level("warn"))
	defer func() { _ = log.Sync() }()
	c, err := kube.Connect(*kubeconfig, *kubeContext, log.Named("kube"))
	if err != nil {
		fmt.Fprintf(stderr, "agent scan: %v\n", err)
		return ExitError
	}
	rep, err := c.ClusterProblems(ctx, kube.ProblemOptions{Namespace: *ns, MaxChars: scanMaxChars})
	if err != nil {
		fmt.Fprintf(stderr, "agent scan: %v\n", redactText(err.Error()))
		return ExitError
	}
	res := result(rep, *failOn)
	if err := write(stdout, *output, rep, res); err != nil {
		fmt.Fprintf(stderr, "agent scan: writing the report: %v\n", err)
		return ExitError
	}
	return exitCode(res, stderr)
}

// result summarises rep against the threshold.
func result(rep *kube.ProblemReport, failOn string) ScanResult {
	res := ScanResult{
		Verdict: rep.Verdict(), Scope: rep.Coverage.Scope, FailOn: failOn,
		Counts:     map[string]int{api.SeverityCritical: 0, api.SeverityHigh: 0, api.SeverityMedium: 0, api.SeverityLow: 0},
		Findings:   kube.ProblemsToFindings(rep),
		NotChecked: []string{}, ChecksRun: append([]string{}, rep.Coverage.ChecksRun...),
	}
	if res.Findings == nil {
		res.Findings = []api.Finding{}
	}
	for _, n := range rep.NotChecked() {
		res.NotChecked = append(res.NotChecked, redactText(n))
	}
	limit := api.SeverityRank(failOn)
	for _, f := range res.Findings {
		res.Counts[f.Severity]++
		if api.SeverityRank(f.Severity) <= limit {
			res.Failed = true
		}
	}
	return res
}

// write prints the report: the rendered sweep (the same text the
// cluster_problems tool answers, redacted like every tool output) or JSON.
func write(w io.Writer, output string, rep *kube.ProblemReport, res ScanResult) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	text := redactText(rep.Render())
	_, err := fmt.Fprintf(w, "%s\n\nscan: %s; fail-on %s: %s\n", strings.TrimRight(text, "\n"), res.Verdict, res.FailOn, outcome(res))
	return err
}

func outcome(res ScanResult) string {
	switch {
	case res.Failed:
		return "FAIL"
	case incomplete(res):
		return "ERROR (not everything could be checked)"
	}
	return "ok"
}

// exitCode maps the result to the exit code; a sweep that could not check
// what it claims is an error, not a pass.
func exitCode(res ScanResult, stderr io.Writer) int {
	if res.Failed {
		return ExitFound
	}
	if incomplete(res) {
		fmt.Fprintf(stderr, "agent scan: the sweep could not check everything (%s): %s\n", res.Verdict, strings.Join(res.NotChecked, "; "))
		return ExitError
	}
	return ExitClean
}

// incomplete: something was not checked, so passing would claim too much.
func incomplete(res ScanResult) bool {
	return len(res.NotChecked) > 0 || res.Verdict == kube.VerdictUnknown
}

func redactText(s string) string {
	out, _ := redact.String(s)
	return out
}

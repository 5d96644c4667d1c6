package sandbox

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// summary prints the incident's outcome in a few lines.
func summary(out io.Writer, f *Fleet, o *Outcome, err error, started time.Time) {
	p := func(format string, args ...any) { fmt.Fprintf(out, "[kubecrew] "+format+"\n", args...) }
	if err != nil {
		p("the incident did NOT complete: %v", err)
		p("the logs of every process are in the run directory; the fleet keeps running for a look")
		return
	}
	p("done: alert → dispatched → %d findings → delegated to Sol → PR #%d (+%d/−%d) → %s by %s → merged",
		len(o.Investigation.Findings), o.PR.Number, o.Plus, o.Minus, lastVerdict(o), lastReviewer(o))
	p("alert to merge: %.1fs; start to merge: %.1fs", o.MergedAfter.Seconds(), time.Since(started).Seconds())
	p("dashboard (overview, alerts, this investigation, agents; live): %s/  ·  this investigation: %s/investigations/%s", f.Core, f.Core, o.Investigation.ID)
	if o.ChainStatus == http.StatusOK {
		p("chain report (the outcome first, then Noor → Sol → Vera, HTML): %s", o.ChainURL)
	} else {
		p("chain report: %s (this core answers %d)", o.ChainURL, o.ChainStatus)
	}
	switch o.ReportStatus {
	case http.StatusOK:
		p("incident report (Noor's run, HTML): %s", o.ReportURL)
	default:
		p("incident report: %s (this agent build answers %d)", o.ReportURL, o.ReportStatus)
	}
	if repo := localRepoOf(o.PR.URL); repo != "" && o.PR.Branch != "" {
		p("the PR's branch (a local git repository, no web page): git --git-dir=%s show %s", repo, o.PR.Branch)
		p("                 and main after the merge:          git --git-dir=%s log --oneline -3 main", repo)
	} else if o.PR.URL != "" {
		p("the PR: %s (branch %s)", o.PR.URL, o.PR.Branch)
	}
}

// localRepoOf is the repository path of a local forge's PR URL
// (file:///path/gitops.git#pull/1), or "".
func localRepoOf(u string) string {
	p, ok := strings.CutPrefix(u, "file://")
	if !ok {
		return ""
	}
	p, _, _ = strings.Cut(p, "#")
	return p
}

func lastVerdict(o *Outcome) string {
	if len(o.Reviews) == 0 {
		return "no review"
	}
	return o.Reviews[len(o.Reviews)-1].Verdict
}

func lastReviewer(o *Outcome) string {
	if len(o.Reviews) == 0 {
		return "nobody"
	}
	return o.Reviews[len(o.Reviews)-1].Reviewer
}

// tryIt prints example requests against the running fleet.
func tryIt(out io.Writer, f *Fleet, o *Outcome, m mode) {
	p := func(format string, args ...any) { fmt.Fprintf(out, "[kubecrew] "+format+"\n", args...) }
	fmt.Fprintln(out)
	p("the fleet is running — core %s; noor %s, sol %s, vera %s, dax %s, ada %s",
		f.Core, f.URL(persona.NameNoor), f.URL(persona.NameSol), f.URL(persona.NameVera), f.URL(persona.NameDax), f.URL(persona.NameAda))
	// Every route but the probes wants the fleet's token (Token).
	p("the fleet's AUTH_TOKEN (every request but the probes needs it; the dashboard asks for it once at %s/login):", f.Core)
	fmt.Fprintf(out, "    export KUBECREW_TOKEN=%s\n", Token())
	p("try:")
	noor := f.URL(persona.NameNoor)
	const curl = `curl -s -H "Authorization: Bearer $KUBECREW_TOKEN"`
	lines := []string{
		fmt.Sprintf("%s %s/api/v1/agents | jq '.agents[] | {slug, status, model}'", curl, f.Core),
		fmt.Sprintf("%s %s/api/v1/alerts | jq .", curl, f.Core),
		fmt.Sprintf("%s %s/api/v1/investigations | jq .", curl, f.Core),
		fmt.Sprintf("%s %s/api/v1/audit | jq .", curl, f.Core),
		fmt.Sprintf("%s %s/info | jq '{agent, model, tools: [.tools[].name]}'", curl, noor),
		fmt.Sprintf("%s %s/run -H 'Content-Type: application/json' -d '{\"task\":\"Sweep namespace %s\",\"context\":{\"namespace\":\"%s\"}}' | jq '{status, verdict, findings: [.findings[] | .key]}'", curl, noor, FixtureNamespace, FixtureNamespace),
		fmt.Sprintf("%s %s/a2a/log | jq .", curl, f.URL(persona.NameSol)),
	}
	if m == modeReadOnly {
		lines[5] = fmt.Sprintf("%s %s/run -H 'Content-Type: application/json' -d '{\"task\":\"Sweep the cluster\"}' | jq '{status, verdict, findings: [.findings[] | .key]}'", curl, noor)
	}
	if o != nil && o.NoorRun.RunID != "" {
		lines = append(lines,
			fmt.Sprintf("%s %s/runs/%s | jq '{status, verdict, delegation}'", curl, noor, o.NoorRun.RunID),
			fmt.Sprintf("%s %s/runs/%s/report > report.html   # the incident as a page", curl, noor, o.NoorRun.RunID))
	}
	if o != nil && o.ChainURL != "" {
		lines = append(lines, fmt.Sprintf("open %s   # the chain: outcome, then every agent's run", o.ChainURL))
	}
	for _, l := range lines {
		fmt.Fprintf(out, "    %s\n", l)
	}
	p("Ctrl-C stops everything this started")
}

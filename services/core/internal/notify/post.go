package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

// Post is what one finished investigation says in chat.
type Post struct {
	Inv    store.Investigation
	Result kapi.RunResult    // the triage run's result as the dispatcher got it
	Runs   []tracereport.Run // the chain (Noor → Sol → Vera), when it could be read
	Labels map[string]string // the alert's labels
	Link   string            // the investigation's report page, when CORE_PUBLIC_URL is set
}

// alertLabels reads the labels of the alert stored with an investigation.
func alertLabels(alert []byte) map[string]string {
	var doc struct {
		Labels map[string]string `json:"labels"`
	}
	_ = json.Unmarshal(alert, &doc)
	if doc.Labels == nil {
		doc.Labels = map[string]string{}
	}
	return doc.Labels
}

// subject names the alert: its name and namespace.
func subject(alertname string, labels map[string]string) string {
	s := "Alert " + alertname
	if ns := labels["namespace"]; ns != "" {
		s += " in " + ns
	}
	return s
}

// Report builds the chat report of p: the findings by severity with their
// lifecycle, then what was done (the PR and its link, a restart), the
// reviewer's verdict, and what waits for a human.
func (p Post) Report() report.Report {
	fs := p.Result.Findings
	if len(fs) == 0 {
		fs = p.Inv.Findings
	}
	r := report.Report{
		Title:       report.Title(subject(p.Inv.Alertname, p.Labels), fs),
		Findings:    fs,
		Lifecycle:   p.Result.Lifecycle,
		MaxFindings: report.SweepLines,
	}
	if n := len(p.Result.Lifecycle.Resolved()); n > 0 {
		r.Title += fmt.Sprintf(" — %d resolved", n)
	}
	var notes, human []string
	if p.Inv.Status == kapi.StatusFailed {
		notes = append(notes, "The investigation failed: "+safetext.Clean(p.Inv.Error, 300))
	}
	if o := tracereport.Conclude(p.Runs); o != nil {
		notes = append(notes, "Done: "+safetext.Clean(o.Headline, 300))
		if o.Link != "" {
			notes = append(notes, "PR: "+o.Link)
		}
		notes = append(notes, o.Lines...)
		if o.State == "open" {
			human = append(human, safetext.Clean(o.Headline, 300))
		}
	}
	if d := p.Result.Delegation; d != nil {
		line := fmt.Sprintf("Delegated to %s: %s", d.To, d.Outcome())
		if d.Verdict != "" {
			line += " (" + d.Verdict + ")"
		}
		if first := firstLine(d.Result); first != "" {
			line += " — " + safetext.Clean(first, 200)
		}
		notes = append(notes, line)
		if d.Outcome() == kapi.VerdictDelegationRefused {
			human = append(human, fmt.Sprintf("%s did not act on %s: %s", d.To, d.Finding.Key, safetext.Clean(firstLine(d.Result), 200)))
		}
	}
	notes = append(notes, reviewLines(p.Runs)...)
	switch p.Result.Verdict {
	case "partial", "unknown":
		human = append(human, "The sweep could not check everything: "+safetext.Clean(firstLine(p.Result.Answer), 200))
	}
	for _, h := range human {
		notes = append(notes, "Waits for a human: "+h)
	}
	if p.Link != "" {
		notes = append(notes, "Report: "+p.Link)
	} else {
		notes = append(notes, "Investigation "+p.Inv.ID)
	}
	r.Notes = strings.Join(notes, "\n")
	return r
}

// reviewLines are the code reviewer's verdicts in the chain, or "pending"
// when a PR was opened and no review ended yet.
func reviewLines(runs []tracereport.Run) []string {
	var out []string
	opened := false
	for _, r := range runs {
		if r.Verdict == kapi.VerdictActionTaken && strings.Contains(r.Answer, "PR") {
			opened = true
		}
		if r.Agent != persona.SlugVera && r.AgentName != persona.SlugVera {
			continue
		}
		switch {
		case r.Status == kapi.StatusRunning || r.Status == "":
			out = append(out, "Review: code-reviewer is still reviewing")
		case r.Verdict != "":
			out = append(out, "Review: code-reviewer — "+safetext.Clean(r.Verdict, 40))
		}
	}
	if len(out) == 0 && opened {
		out = append(out, "Review: pending")
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// followUp is the short post of a resolved alert.
func followUp(inv store.Investigation, labels map[string]string, at string) report.Report {
	return report.Report{
		Title: "✅ Resolved: " + subject(inv.Alertname, labels),
		Notes: fmt.Sprintf("Alertmanager reports %s resolved at %s (investigation %s).", inv.Alertname, at, inv.ID),
	}
}

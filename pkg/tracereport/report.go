// Package tracereport renders runs and their traces as one self-contained
// HTML page (no external assets) a person can read after the fact: task,
// answer, findings, duration, a tool-call tally and the whole event
// timeline with guard denials highlighted. An agent renders one run; the
// core renders an investigation's chain of runs across agents.
// html/template escapes every payload.
package tracereport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Run is one run as the page shows it.
type Run struct {
	api.RunResult
	AgentName   string
	Task        string
	Caller      string
	SocialDepth int
	Trace       []store.Event
	// FetchError is set when the run could not be read (the page says so).
	FetchError string
}

// Page is what Render draws.
type Page struct {
	Title string
	Intro []string
	Runs  []Run
	// Outcome, when set, opens the page (see Conclude).
	Outcome *Outcome
	// Waiting are the changes the chain's runs left for a human: proposals
	// (shadow mode) and recommendations (over a budget), each with the
	// exact change (docs/MANUAL.md, "The action envelope").
	Waiting []api.ActionView
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"ts": func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1d1f23}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:2rem 0 .3rem;padding-top:.6rem;border-top:3px solid #445}
h3{font-size:1rem;margin:1.2rem 0 .4rem;border-bottom:1px solid #ddd}
.meta{color:#555}.status-completed{color:#137333}.status-partial{color:#b06000}.status-failed{color:#c5221f}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.6rem;border-radius:4px;margin:.3rem 0}
table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left;border-bottom:1px solid #eee}
details{border-left:3px solid #ccd;margin:.25rem 0;padding-left:.6rem}
details.guard_denied{border-color:#c5221f;background:#fdecea}
summary{cursor:pointer}.t{color:#777;font-family:monospace}
.sev{font-weight:bold;text-transform:uppercase;font-size:.85em}.sev-critical{color:#c5221f}.sev-high{color:#b06000}.sev-medium{color:#8a6d00}.sev-low{color:#1a5fb4}
.outcome{border:2px solid #445;border-radius:6px;padding:.6rem .9rem;margin:.8rem 0 1.2rem}
.outcome-merged,.outcome-done{border-color:#137333}.outcome-failed,.outcome-refused{border-color:#c5221f}.outcome-open{border-color:#b06000}
</style></head><body>
<h1>{{.Title}}</h1>
{{with .Outcome}}<div class="outcome outcome-{{.State}}"><b>Outcome: {{.Headline}}</b>
{{if .Link}}<div>{{if .Openable}}<a href="{{.Link}}">{{.Link}}</a>{{else}}<code>{{.Link}}</code>{{end}}</div>{{end}}
{{range .Lines}}<div class="meta">{{.}}</div>{{end}}</div>{{end}}
{{range .Intro}}<div class="meta">{{.}}</div>{{end}}
{{if .Waiting}}<h2>Waiting for a human ({{len .Waiting}})</h2>
<p class="meta">Prepared by the fleet and not made: proposals (shadow mode) and recommendations (over a budget). Nothing happens until a person acts on them.</p>
{{range .Waiting}}<details open class="waiting"><summary><b>{{.Outcome}}</b> {{.Action}} {{.Namespace}}/{{.Kind}}/{{.Name}}{{if .Container}} ({{.Container}}){{end}}{{if or .Old .New}} {{.Old}} → {{.New}}{{end}} — by {{.Agent}}, run <code>{{.RunID}}</code>, {{ts .At}}</summary>
{{if .Why}}<div class="meta">{{.Why}}</div>{{end}}<pre>{{.Change}}</pre></details>
{{end}}{{end}}
{{range .Runs}}
<h2>{{.AgentName}} — run <code>{{.RunID}}</code></h2>
{{if .FetchError}}<p class="status-failed">Could not read this run: {{.FetchError}}</p>{{else}}
<div class="meta">{{.WorkflowType}} · <span class="status-{{.Status}}">{{.Status}}</span>{{if .Verdict}} · verdict {{.Verdict}}{{end}} ·
{{.Duration}} · {{.Iterations}} model calls · {{.Tokens.Prompt}}+{{.Tokens.Completion}} tokens{{if .Caller}} · called by {{.Caller}} (depth {{.SocialDepth}}){{end}}</div>
{{if .Error}}<p class="status-failed"><b>Error:</b> {{.Error}}</p>{{end}}
<h3>Task</h3><pre>{{.Task}}</pre>
<h3>Answer</h3><pre>{{.Answer}}</pre>
<h3>Findings ({{len .Findings}})</h3>
{{if .Findings}}<table><tr><th></th><th>object</th><th>reason</th><th>detail</th><th>remediation</th></tr>
{{range .Findings}}<tr><td class="sev sev-{{.Severity}}">{{.Severity}}</td><td>{{.Namespace}}/{{.Kind}}/{{.Name}}{{if .Container}} ({{.Container}}){{end}}</td><td>{{.Reason}}</td><td>{{.Detail}}</td><td>{{.Remediation}}{{if .Remediable}} (remediable){{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
{{with .Delegation}}<h3>Delegation</h3><p>To <b>{{.To}}</b>: {{.Finding.Key}} — {{if .Sent}}sent{{if .RunID}}, their run <code>{{.RunID}}</code>{{end}}{{else}}not sent{{end}}{{if .Error}} — {{.Error}}{{end}}</p>{{if .Result}}<pre>{{.Result}}</pre>{{end}}{{end}}
<h3>Tool calls</h3>
{{if .Tally}}<table><tr><th>tool</th><th>calls</th><th>errors</th><th>denied</th></tr>
{{range .Tally}}<tr><td>{{.Name}}</td><td>{{.Calls}}</td><td>{{.Errors}}</td><td>{{.Denied}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}
{{if .Denials}}<p class="status-failed"><b>{{.Denials}} guard denial(s)</b> — highlighted below.</p>{{end}}
<h3>Timeline ({{len .Events}} events)</h3>
{{range .Events}}<details class="{{.Type}}"><summary><span class="t">{{ts .Time}}</span> <b>{{.Type}}</b> {{.Summary}}</summary><pre>{{.Data}}</pre></details>
{{end}}{{end}}
{{end}}
</body></html>
`))

type tallyRow struct {
	Name                  string
	Calls, Errors, Denied int
}

type reportEvent struct {
	Type    string
	Time    time.Time
	Summary string
	Data    string
}

type runView struct {
	Run
	Duration string
	Tally    []tallyRow
	Denials  int
	Events   []reportEvent
}

// Render draws p.
func Render(p Page) ([]byte, error) {
	var views []runView
	for _, r := range p.Runs {
		views = append(views, view(r))
	}
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		Title   string
		Intro   []string
		Runs    []runView
		Outcome *Outcome
		Waiting []api.ActionView
	}{p.Title, p.Intro, views, p.Outcome, p.Waiting})
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func view(v Run) runView {
	rv := runView{Run: v, Duration: "running"}
	if v.FinishedAt != nil {
		rv.Duration = v.FinishedAt.Sub(v.StartedAt).Round(time.Millisecond).String()
	}
	tally := map[string]*tallyRow{}
	for _, ev := range v.Trace {
		var m map[string]any
		_ = json.Unmarshal(ev.Data, &m)
		pretty, _ := json.MarshalIndent(m, "", "  ")
		rv.Events = append(rv.Events, reportEvent{Type: ev.Type, Time: ev.Time, Data: string(pretty), Summary: summarize(ev.Type, m)})
		switch ev.Type {
		case "tool_result":
			name, _ := m["name"].(string)
			row := tally[name]
			if row == nil {
				row = &tallyRow{Name: name}
				tally[name] = row
			}
			row.Calls++
			switch m["outcome"] {
			case "denied":
				row.Denied++
			case "ok":
			default:
				row.Errors++
			}
		case "guard_denied":
			rv.Denials++
		}
	}
	for _, r := range tally {
		rv.Tally = append(rv.Tally, *r)
	}
	sort.Slice(rv.Tally, func(i, j int) bool { return rv.Tally[i].Name < rv.Tally[j].Name })
	return rv
}

// Link is a run another run handed work to.
type Link struct{ Agent, RunID string }

// Links lists the runs r sent A2A messages to (a2a_send events that name
// the callee's run), and the run its delegation reached, in trace order.
func Links(r Run) []Link {
	var out []Link
	seen := map[Link]bool{}
	add := func(l Link) {
		if l.Agent != "" && l.RunID != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, ev := range r.Trace {
		if ev.Type != "a2a_send" {
			continue
		}
		var m struct {
			To          string `json:"to"`
			CalleeRunID string `json:"callee_run_id"`
		}
		if json.Unmarshal(ev.Data, &m) == nil {
			add(Link{Agent: m.To, RunID: m.CalleeRunID})
		}
	}
	if d := r.Delegation; d != nil {
		add(Link{Agent: d.To, RunID: d.RunID})
	}
	return out
}

func summarize(typ string, m map[string]any) string {
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch typ {
	case "tool_call":
		return str("name")
	case "tool_result":
		return fmt.Sprintf("%s → %s", str("name"), str("outcome"))
	case "guard_denied":
		if t := str("tool"); t != "" {
			return fmt.Sprintf("%s gate refused %s", str("gate"), t)
		}
		return str("gate") + " gate: " + str("reason")
	case "llm_response":
		if e := str("error"); e != "" {
			return "error: " + e
		}
		return "from " + str("endpoint")
	case "run_finish":
		return str("status")
	case "a2a_send":
		s := fmt.Sprintf("%s → %s: %s", str("verb"), str("to"), str("outcome"))
		if e := str("error"); e != "" {
			s += " — " + e
		}
		return s
	case "a2a_received":
		return fmt.Sprintf("%s from %s", str("verb"), str("caller"))
	}
	return ""
}

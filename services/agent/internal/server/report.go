package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// reportPage is GET /runs/{id}/report: one self-contained HTML page (no
// external assets) that a person can read after the fact — the task, the
// answer, the findings, the duration, a tool-call tally and the whole event
// timeline, guard denials highlighted. html/template escapes every payload.
var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"dot": func(sev string) string {
		switch sev {
		case api.SeverityCritical:
			return "🔴"
		case api.SeverityHigh:
			return "🟠"
		case api.SeverityMedium:
			return "🟡"
		}
		return "🔵"
	},
	"ts": func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Agent}} run {{.RunID}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1d1f23}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem;border-bottom:1px solid #ddd}
.meta{color:#555}.status-completed{color:#137333}.status-partial{color:#b06000}.status-failed{color:#c5221f}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.6rem;border-radius:4px;margin:.3rem 0}
table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left;border-bottom:1px solid #eee}
details{border-left:3px solid #ccd;margin:.25rem 0;padding-left:.6rem}
details.guard_denied{border-color:#c5221f;background:#fdecea}
summary{cursor:pointer}.t{color:#777;font-family:monospace}
</style></head><body>
<h1>{{.AgentName}} — run <code>{{.RunID}}</code></h1>
<div class="meta">{{.WorkflowType}} · <span class="status-{{.Status}}">{{.Status}}</span>{{if .Verdict}} · verdict {{.Verdict}}{{end}} ·
{{.Duration}} · {{.Iterations}} model calls · {{.Tokens.Prompt}}+{{.Tokens.Completion}} tokens{{if .Caller}} · called by {{.Caller}} (depth {{.SocialDepth}}){{end}}</div>
{{if .Error}}<p class="status-failed"><b>Error:</b> {{.Error}}</p>{{end}}
<h2>Task</h2><pre>{{.Task}}</pre>
<h2>Answer</h2><pre>{{.Answer}}</pre>
<h2>Findings ({{len .Findings}})</h2>
{{if .Findings}}<table><tr><th></th><th>object</th><th>reason</th><th>detail</th><th>remediation</th></tr>
{{range .Findings}}<tr><td>{{dot .Severity}} {{.Severity}}</td><td>{{.Namespace}}/{{.Kind}}/{{.Name}}{{if .Container}} ({{.Container}}){{end}}</td><td>{{.Reason}}</td><td>{{.Detail}}</td><td>{{.Remediation}}{{if .Remediable}} (remediable){{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
{{with .Delegation}}<h2>Delegation</h2><p>To <b>{{.To}}</b>: {{.Finding.Key}} — {{if .Sent}}sent{{if .RunID}}, their run <code>{{.RunID}}</code>{{end}}{{else}}not sent{{end}}{{if .Error}} — {{.Error}}{{end}}</p>{{if .Result}}<pre>{{.Result}}</pre>{{end}}{{end}}
<h2>Tool calls</h2>
{{if .Tally}}<table><tr><th>tool</th><th>calls</th><th>errors</th><th>denied</th></tr>
{{range .Tally}}<tr><td>{{.Name}}</td><td>{{.Calls}}</td><td>{{.Errors}}</td><td>{{.Denied}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}
{{if .Denials}}<p class="status-failed"><b>{{.Denials}} guard denial(s)</b> — highlighted below.</p>{{end}}
<h2>Timeline ({{len .Events}} events)</h2>
{{range .Events}}<details class="{{.Type}}"><summary><span class="t">{{ts .Time}}</span> <b>{{.Type}}</b> {{.Summary}}</summary><pre>{{.Data}}</pre></details>
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

type reportView struct {
	RunView
	AgentName string
	Duration  string
	Tally     []tallyRow
	Denials   int
	Events    []reportEvent
}

// RenderReport renders a run and its trace as a self-contained HTML page.
func RenderReport(v RunView, agentName string) ([]byte, error) {
	rv := reportView{RunView: v, AgentName: agentName, Duration: "running"}
	if v.FinishedAt != nil {
		rv.Duration = v.FinishedAt.Sub(v.StartedAt).Round(time.Millisecond).String()
	}
	tally := map[string]*tallyRow{}
	for _, ev := range v.Trace {
		var m map[string]any
		_ = json.Unmarshal(ev.Data, &m)
		pretty, _ := json.MarshalIndent(m, "", "  ")
		e := reportEvent{Type: ev.Type, Time: ev.Time, Data: string(pretty), Summary: summarize(ev.Type, m)}
		rv.Events = append(rv.Events, e)
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
	var b bytes.Buffer
	if err := reportPage.Execute(&b, rv); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
	case "a2a_send", "a2a_received":
		return fmt.Sprintf("%v %v", m["verb"], m["callee"])
	}
	return ""
}

func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	rec, err := s.d.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no run %q", id))
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading run: "+err.Error())
		return
	}
	evs, err := s.d.Store.Events(r.Context(), id)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "reading trace: "+err.Error())
		return
	}
	page, err := RenderReport(RunView{RunResult: ResultOf(rec), Task: rec.Task, Context: rec.Context, Caller: rec.Caller,
		SocialDepth: rec.SocialDepth, DiscussionID: rec.DiscussionID, Trace: evs}, s.d.Engine.Agent().Name)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rendering: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(page)
}

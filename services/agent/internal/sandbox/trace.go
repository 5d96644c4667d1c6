package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// GetRun fetches one run.
func GetRun(ctx context.Context, base, id string) (api.RunView, error) {
	var v api.RunView
	code, err := GetJSON(ctx, base+"/runs/"+id, &v)
	if err != nil {
		return v, err
	}
	if code != http.StatusOK {
		return v, fmt.Errorf("GET %s/runs/%s: %d", base, id, code)
	}
	return v, nil
}

// watcher follows every run the fleet's agents start after since, adding
// their trace events to the timeline as they appear.
type watcher struct {
	f     *Fleet
	tl    *Timeline
	since time.Time
	lag   time.Duration
	seen  map[string]int  // run id → last seq added
	done  map[string]bool // run ids whose run_finish was added
}

func newWatcher(f *Fleet, tl *Timeline, since time.Time, lag time.Duration) *watcher {
	return &watcher{f: f, tl: tl, since: since, lag: lag, seen: map[string]int{}, done: map[string]bool{}}
}

// tick polls every agent's recent runs once, then prints what is older
// than the lag (steps found later may still belong before it).
func (w *watcher) tick(ctx context.Context) {
	for _, m := range w.f.Members {
		base := w.f.URL(m.Persona)
		var page struct {
			Items []api.RunResult `json:"items"`
		}
		if code, err := GetJSON(ctx, base+"/runs?limit=20", &page); err != nil || code != http.StatusOK {
			continue
		}
		for _, it := range page.Items {
			if w.done[it.RunID] || it.StartedAt.Before(w.since.Add(-time.Second)) {
				continue
			}
			rv, err := GetRun(ctx, base, it.RunID)
			if err != nil {
				continue
			}
			w.show(m.Persona, rv)
		}
	}
	w.tl.Flush(time.Now().Add(-w.lag))
}

// show adds the run's events not added yet.
func (w *watcher) show(who string, run api.RunView) {
	last, ok := w.seen[run.RunID]
	if !ok {
		last = -1
	}
	for _, ev := range run.Trace {
		if ev.Seq <= last {
			continue
		}
		last = ev.Seq
		w.add(who, run.RunID, ev)
		if ev.Type == "run_finish" {
			w.done[run.RunID] = true
		}
	}
	w.seen[run.RunID] = last
}

func (w *watcher) add(who, runID string, ev api.TraceEvent) {
	var d map[string]json.RawMessage
	_ = json.Unmarshal(ev.Data, &d)
	str := func(k string) string {
		var s string
		if json.Unmarshal(d[k], &s) == nil {
			return s
		}
		if raw, ok := d[k]; ok {
			return string(raw)
		}
		return ""
	}
	name := displayName(who)
	at := func(format string, args ...any) { w.tl.Add(ev.Time, nil, format, args...) }
	switch ev.Type {
	case "run_start":
		caller := str("caller")
		if caller == "" {
			caller = "-"
		}
		at("%s started run %s (%s, mode %s, caller %s)", name, runID, str("workflow_type"), str("mode"), caller)
	case "tool_call":
		at("%s calls %s(%s)", name, str("name"), compactArgs(d["args"]))
	case "tool_result":
		out := short(plainPRs(str("output")), 110)
		if o := str("outcome"); o != "ok" {
			at("%s ← %s %s: %s", name, str("name"), o, out)
		} else {
			at("%s ← %s: %s", name, str("name"), out)
		}
	case "guard_denied":
		what := str("tool")
		if what == "" {
			what = str("removed")
		}
		at("%s: guard (%s gate) denied %s %s", name, str("gate"), what, short(str("reason")+str("message"), 100))
	case "a2a_send":
		line := fmt.Sprintf("%s → %s over A2A (%s, depth %s): %q — %s", name, displayName(str("to")), str("verb"), str("depth"),
			short(str("text"), 90), str("outcome"))
		if id := str("callee_run_id"); id != "" {
			line += ", their run " + id
		}
		if e := str("error"); e != "" {
			line += ", error: " + short(e, 100)
		}
		at("%s", line)
	case "run_finish":
		var notes []string
		if e := str("error"); e != "" {
			notes = append(notes, "error: "+short(e, 200))
		}
		w.tl.Add(ev.Time, notes, "%s's run %s finished: %s, verdict %q, %s finding(s), %s ms", name, runID, str("status"), str("verdict"),
			str("findings"), str("duration_ms"))
	case "llm_response":
		if e := str("error"); e != "" {
			at("%s: model call failed: %s", name, short(e, 120))
		}
	case "backstop", "fallback_playbook", "ceiling":
		at("%s: %s %s", name, ev.Type, short(string(ev.Data), 120))
	}
}

// localPRs matches a local forge's PR URL (file:///…/gitops.git#pull/1),
// which no browser opens; the summary prints the git command instead.
var localPRs = regexp.MustCompile(`file://(\S+?)#pull/\d+`)

// plainPRs shows a local PR as its repository, which git opens.
func plainPRs(s string) string {
	return localPRs.ReplaceAllString(s, "$1 (a local git repository, no web page)")
}

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Timeline prints what happens, one line per step, stamped with the time
// the step happened (taken from the agents' traces and the forge's records
// where they have one, else the time it was observed). Steps are gathered
// by polling several agents, so they are held back a moment (Flush) and
// printed in time order.
type Timeline struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	pending []step
	seq     int
}

type step struct {
	at    time.Time
	seq   int
	text  string
	notes []string
}

// NewTimeline writes to w.
func NewTimeline(w io.Writer, now func() time.Time) *Timeline {
	if now == nil {
		now = time.Now
	}
	return &Timeline{w: w, now: now}
}

const stampLayout = "15:04:05.000"

// Add queues one step that happened at ts (zero: now), with detail lines.
func (t *Timeline) Add(ts time.Time, notes []string, format string, args ...any) {
	if ts.IsZero() {
		ts = t.now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.pending = append(t.pending, step{at: ts, seq: t.seq, text: fmt.Sprintf(format, args...), notes: notes})
}

// Flush prints the queued steps that happened up to upTo, oldest first.
func (t *Timeline) Flush(upTo time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sort.SliceStable(t.pending, func(i, j int) bool {
		if !t.pending[i].at.Equal(t.pending[j].at) {
			return t.pending[i].at.Before(t.pending[j].at)
		}
		return t.pending[i].seq < t.pending[j].seq
	})
	n := 0
	for n < len(t.pending) && !t.pending[n].at.After(upTo) {
		n++
	}
	pad := strings.Repeat(" ", len(stampLayout)+3)
	for _, s := range t.pending[:n] {
		fmt.Fprintf(t.w, "[%s] %s\n", s.at.Local().Format(stampLayout), s.text)
		for _, note := range s.notes {
			for _, l := range strings.Split(strings.TrimRight(note, "\n"), "\n") {
				fmt.Fprintf(t.w, "%s%s\n", pad, l)
			}
		}
	}
	t.pending = append(t.pending[:0], t.pending[n:]...)
}

// FlushAll prints every queued step.
func (t *Timeline) FlushAll() { t.Flush(time.Unix(1<<40, 0)) }

// displayName is the persona name for a slug ("platform-sre" → "Noor").
func displayName(slugOrPersona string) string {
	for _, m := range Personas {
		if m.Slug == slugOrPersona || m.Persona == slugOrPersona {
			return strings.ToUpper(m.Persona[:1]) + m.Persona[1:]
		}
	}
	if slugOrPersona == "core" {
		return "core"
	}
	return slugOrPersona
}

// short cuts s to its first line and n runes.
func short(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return s
}

// compactArgs renders tool arguments as k=v pairs, sorted.
func compactArgs(raw json.RawMessage) string {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return short(s, 100)
		}
		return short(string(raw), 100)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		if s, ok := v.(string); ok {
			parts = append(parts, k+"="+short(s, 40))
		} else {
			b, _ := json.Marshal(v)
			parts = append(parts, k+"="+short(string(b), 40))
		}
	}
	return strings.Join(parts, ", ")
}

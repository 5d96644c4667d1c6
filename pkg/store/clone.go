package store

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// The normalisers below copy a record (so no caller shares a slice, map or
// pointer with the store) and bring it to the form both stores return:
// times in UTC at microsecond precision, empty collections as nil.

func normRun(r Run) Run {
	if len(r.Context) == 0 {
		r.Context = nil
	} else {
		r.Context = maps.Clone(r.Context)
	}
	r.Findings = cloneFindings(r.Findings)
	if r.Delegation != nil {
		d := *r.Delegation
		r.Delegation = &d
	}
	r.StartedAt = ts(r.StartedAt)
	r.FinishedAt = tsPtr(r.FinishedAt)
	return r
}

func cloneFindings(fs []api.Finding) []api.Finding {
	if len(fs) == 0 {
		return nil
	}
	return slices.Clone(fs)
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func normEvent(e Event) Event {
	e.Time = ts(e.Time)
	e.Data = cloneRaw(e.Data)
	return e
}

func normFinding(f FindingRecord) FindingRecord {
	f.At = ts(f.At)
	return f
}

func normA2A(e A2AEntry) A2AEntry {
	e.Data = cloneRaw(e.Data)
	e.At = ts(e.At)
	e.FinishedAt = tsPtr(e.FinishedAt)
	return e
}

func normAlertState(s AlertState) AlertState {
	s.FirstSeen = ts(s.FirstSeen)
	s.LastSeen = ts(s.LastSeen)
	s.LastInvestigated = ts(s.LastInvestigated)
	return s
}

func normDecision(d AlertDecision) AlertDecision {
	d.At = ts(d.At)
	if d.Count < 1 {
		d.Count = 1
	}
	if d.FirstAt.IsZero() || d.FirstAt.After(d.At) {
		d.FirstAt = d.At
	}
	d.FirstAt = ts(d.FirstAt)
	return d
}

func normInvestigation(i Investigation) Investigation {
	i.Findings = cloneFindings(i.Findings)
	i.Alert = cloneBytes(i.Alert)
	i.StartedAt = ts(i.StartedAt)
	i.FinishedAt = tsPtr(i.FinishedAt)
	return i
}

func validJSON(what string, b []byte) error {
	if len(b) > 0 && !json.Valid(b) {
		return invalidf("%s is not valid JSON", what)
	}
	return nil
}

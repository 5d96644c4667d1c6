package store

import (
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// The prep functions validate input and fill defaults the same way for both
// stores, so the contract suite holds them to one behaviour.

func prepRun(r Run, now func() time.Time) (Run, error) {
	if err := required("run id", r.ID); err != nil {
		return Run{}, err
	}
	if err := required("run agent", r.Agent); err != nil {
		return Run{}, err
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now()
	}
	if r.Status == "" {
		r.Status = api.StatusRunning
	}
	return cleanRun(normRun(r)), nil
}

func prepRunUpdate(r Run) (Run, error) {
	if err := required("run id", r.ID); err != nil {
		return Run{}, err
	}
	return cleanRun(normRun(r)), nil
}

func prepEvents(evs []Event, now func() time.Time) ([]Event, error) {
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		if err := required("event run_id", e.RunID); err != nil {
			return nil, err
		}
		if err := required("event type", e.Type); err != nil {
			return nil, err
		}
		if e.Seq < 0 {
			return nil, invalidf("event seq %d is negative", e.Seq)
		}
		if err := validJSON("event data", e.Data); err != nil {
			return nil, err
		}
		if e.Time.IsZero() {
			e.Time = now()
		}
		e = normEvent(e)
		e.Type, e.Data = clean(e.Type), cleanJSON(e.Data)
		out = append(out, e)
	}
	return out, nil
}

func prepFindings(runID, agent string, at time.Time, fs []api.Finding, now func() time.Time) ([]FindingRecord, error) {
	if err := required("run id", runID); err != nil {
		return nil, err
	}
	if err := required("agent", agent); err != nil {
		return nil, err
	}
	if at.IsZero() {
		at = now()
	}
	out := make([]FindingRecord, 0, len(fs))
	for _, f := range fs {
		out = append(out, normFinding(FindingRecord{ID: newID(), RunID: runID, Agent: agent, Finding: cleanFinding(f), At: at}))
	}
	return out, nil
}

func prepPulseState(s PulseState) (PulseState, error) {
	if err := required("pulse agent", s.Agent); err != nil {
		return PulseState{}, err
	}
	if err := required("pulse task", s.Task); err != nil {
		return PulseState{}, err
	}
	s.LastRun = ts(s.LastRun)
	s.Outcome, s.RunID = clean(s.Outcome), clean(s.RunID)
	return s, nil
}

func prepPulseLock(agent, holder string) error {
	if err := required("pulse lock agent", agent); err != nil {
		return err
	}
	return required("pulse lock holder", holder)
}

func prepMemoryFile(f MemoryFile, now func() time.Time) (MemoryFile, error) {
	if err := validateMemoryFile(f); err != nil {
		return MemoryFile{}, err
	}
	if f.UpdatedAt.IsZero() {
		f.UpdatedAt = now()
	}
	f.UpdatedAt = ts(f.UpdatedAt)
	return f, nil
}

func prepA2A(e A2AEntry, now func() time.Time) (A2AEntry, error) {
	if e.ID == "" {
		e.ID = newID()
	}
	if err := required("a2a agent", e.Agent); err != nil {
		return A2AEntry{}, err
	}
	if err := validJSON("a2a data", e.Data); err != nil {
		return A2AEntry{}, err
	}
	if e.At.IsZero() {
		e.At = now()
	}
	return cleanA2A(normA2A(e)), nil
}

func prepA2AUpdate(e A2AEntry) (A2AEntry, error) {
	if err := required("a2a id", e.ID); err != nil {
		return A2AEntry{}, err
	}
	if err := validJSON("a2a data", e.Data); err != nil {
		return A2AEntry{}, err
	}
	return cleanA2A(normA2A(e)), nil
}

func prepStamp(s DeliveryStamp, now func() time.Time) (DeliveryStamp, error) {
	for _, f := range []struct{ what, v string }{{"delivery agent", s.Agent}, {"delivery task", s.Task}, {"delivery target", s.Target}} {
		if err := required(f.what, f.v); err != nil {
			return DeliveryStamp{}, err
		}
	}
	if s.At.IsZero() {
		s.At = now()
	}
	s.At = ts(s.At)
	s.BodyHash, s.Thread = clean(s.BodyHash), clean(s.Thread)
	return s, nil
}

// decide runs fn and applies the invariants every store keeps: the state
// belongs to fingerprint and agent; a dispatch puts the alert in flight
// under a fresh investigation id and clears Pending; the investigation
// exists with that id.
func decide(fingerprint, agent string, prev AlertState, ok bool, inFlight int, fn DecideFunc, mkInv func(AlertDecision) *Investigation, now func() time.Time) (AlertDecision, AlertState, *Investigation, error) {
	if fn == nil {
		return AlertDecision{}, AlertState{}, nil, invalidf("decide function is nil")
	}
	d, st := fn(prev, ok, inFlight)
	if !validDecision(d.Decision) || d.Decision == DecisionRejected {
		return AlertDecision{}, AlertState{}, nil, invalidf("decision %q is not one of dispatched|deduped|cooldown|busy|ignored|resolved|joined|dropped (a rejected alert is recorded with RecordDecision)", d.Decision)
	}
	t := now()
	// The state is the incident's (its correlation key); the decision
	// names the alert it decided when fn says so.
	if d.Fingerprint == "" {
		d.Fingerprint = fingerprint
	}
	if d.Agent == "" {
		d.Agent = agent
	}
	if d.ID == "" {
		d.ID = newID()
	}
	if d.At.IsZero() {
		d.At = t
	}
	st.Fingerprint = fingerprint
	st.Agent = agent // in-flight slots are counted by the agent ApplyAlert was given
	if st.Alertname == "" {
		st.Alertname = d.Alertname
	}
	if st.FirstSeen.IsZero() {
		st.FirstSeen = t
	}
	if st.LastSeen.IsZero() {
		st.LastSeen = t
	}
	var inv *Investigation
	if d.Decision == DecisionDispatched {
		if d.InvestigationID == "" {
			d.InvestigationID = newID()
		}
		st.InFlight = true
		st.Pending = false
		st.InvestigationID = d.InvestigationID
		var i Investigation
		if mkInv != nil {
			if p := mkInv(d); p != nil {
				i = *p
			}
		}
		i.ID = d.InvestigationID
		i.Fingerprint = fingerprint
		if i.Alertname == "" {
			i.Alertname = d.Alertname
		}
		i.Agent = agent
		if i.Status == "" {
			i.Status = api.StatusRunning
		}
		if i.StartedAt.IsZero() {
			i.StartedAt = d.At
		}
		i = cleanInvestigation(normInvestigation(i))
		inv = &i
	}
	d.Fingerprint, d.Alertname, d.Status, d.Agent, d.InvestigationID, d.Reason = clean(d.Fingerprint), clean(d.Alertname), clean(d.Status), clean(d.Agent), clean(d.InvestigationID), clean(d.Reason)
	st.Alertname, st.ContentHash, st.InvestigationID = clean(st.Alertname), clean(st.ContentHash), clean(st.InvestigationID)
	return normDecision(d), normAlertState(st), inv, nil
}

// prepDecision checks a decision recorded without an alert state.
func prepDecision(d AlertDecision, now func() time.Time) (AlertDecision, error) {
	if d.Decision != DecisionRejected {
		return AlertDecision{}, invalidf("decision %q: only a rejected alert is recorded without its state", d.Decision)
	}
	if strings.TrimSpace(d.Reason) == "" {
		return AlertDecision{}, invalidf("a rejected alert needs its reason")
	}
	if d.ID == "" {
		d.ID = newID()
	}
	if err := required("decision id", d.ID); err != nil {
		return AlertDecision{}, err
	}
	if d.At.IsZero() {
		d.At = now()
	}
	d.Fingerprint, d.Alertname, d.Status, d.Agent = clean(d.Fingerprint), clean(d.Alertname), clean(d.Status), clean(d.Agent)
	d.InvestigationID, d.Reason = clean(d.InvestigationID), clean(d.Reason)
	return normDecision(d), nil
}

func prepFinish(inv Investigation, now func() time.Time) (Investigation, error) {
	if err := required("investigation id", inv.ID); err != nil {
		return Investigation{}, err
	}
	switch inv.Status {
	case api.StatusCompleted, api.StatusPartial, api.StatusFailed:
	default:
		return Investigation{}, invalidf("investigation status %q: a finished investigation is completed, partial or failed", inv.Status)
	}
	if inv.FinishedAt == nil {
		t := now()
		inv.FinishedAt = &t
	}
	return cleanInvestigation(normInvestigation(inv)), nil
}

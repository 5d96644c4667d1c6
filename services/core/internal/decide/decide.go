// Package decide holds the core's alert decision: a pure function from an
// alert, its previous state, the target agent's load, its route and the time
// to a decision, a reason and the alert's new state. It never does I/O; the
// store runs it under a lock (store.Alerts.ApplyAlert) so replicas agree.
package decide

import (
	"fmt"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Decisions (docs/ARCHITECTURE.md).
const (
	Dispatched = "dispatched"
	Deduped    = "deduped"
	Cooldown   = "cooldown"
	Busy       = "busy"
	Ignored    = "ignored"
	Resolved   = "resolved"
	// Rejected is a malformed alert (webhook.Alert.Problem): recorded by
	// the pipeline with its reason, never decided here.
	Rejected = "rejected"
	// Joined is an alert that joined its incident's running investigation
	// ("also firing") instead of starting one.
	Joined = "joined"
	// Dropped is an incident dropped from its agent's full busy queue.
	Dropped = "dropped"
)

// All lists every decision, for metrics and docs.
var All = []string{Dispatched, Deduped, Cooldown, Busy, Ignored, Resolved, Rejected, Joined, Dropped}

// Alert statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// MaxBackoff caps the standing-alert backoff.
const MaxBackoff = 24 * time.Hour

// Alert is what the decision needs to know about one alert.
type Alert struct {
	Fingerprint string
	Alertname   string
	Status      string // firing|resolved
	// Hash of labels and annotations: a change is new information.
	Hash string
}

// Route is the part of the routing result the decision uses.
type Route struct {
	Agent        string
	Cooldown     time.Duration
	MaxInFlight  int
	Ignored      bool
	IgnoreReason string
}

// Input is everything one decision depends on. The state (Prev) is the
// incident's: every alert sharing the correlation Key (docs/MANUAL.md, "Storms").
type Input struct {
	Alert Alert
	Route Route
	// Key is the alert's correlation key (its incident).
	Key string
	// NewMember: the incident's running investigation is known (this
	// process started it, or heard another replica did) and the alert is
	// not part of it yet: it joins. Otherwise a firing alert of a running
	// incident is deduped.
	NewMember bool
	// OthersFiring counts the incident's other alerts firing in the same
	// webhook: one of them resolving does not close the incident.
	OthersFiring int
	// Prev is the alert's previous state; Known is false for a new alert.
	Prev  store.AlertState
	Known bool
	// AgentInFlight is how many alert runs the route's agent has in flight.
	AgentInFlight int
	Now           time.Time
	// DecisionID identifies the recorded decision ("" lets the store choose).
	DecisionID string
	// NewID is the investigation id to use if the alert is dispatched.
	NewID string
	// StaleAfter: an investigation in flight for longer is presumed lost (a
	// core replica died mid-call) and no longer blocks its alert. 0: never.
	StaleAfter time.Duration
}

// Backoff returns how long a standing alert (firing, unchanged) waits after
// its n-th investigation in this firing period: the cooldown, then doubling
// (30m, 1h, 2h, …), capped at MaxBackoff (or the cooldown, if longer).
func Backoff(cooldown time.Duration, n int) time.Duration {
	if n <= 1 {
		return cooldown
	}
	d := cooldown
	for i := 1; i < n; i++ {
		d *= 2
		if d >= MaxBackoff {
			return max(MaxBackoff, cooldown)
		}
	}
	return d
}

// Decide decides one alert. It is pure: same input, same output.
func Decide(in Input) (store.AlertDecision, store.AlertState) {
	a, prev, now := in.Alert, in.Prev, in.Now
	d := store.AlertDecision{
		ID:          in.DecisionID,
		Fingerprint: a.Fingerprint,
		Alertname:   a.Alertname,
		Status:      a.Status,
		Agent:       in.Route.Agent,
		At:          now,
	}
	st := prev
	if !in.Known {
		st = store.AlertState{FirstSeen: now}
	}
	st.Fingerprint = a.Fingerprint
	st.Alertname = a.Alertname
	st.Agent = in.Route.Agent
	st.LastSeen = now

	if in.Route.Ignored {
		st.Firing = a.Status == StatusFiring
		st.Pending = false
		return with(d, Ignored, in.Route.IgnoreReason), st
	}

	if a.Status == StatusResolved {
		return resolve(in, d, st)
	}

	// Firing.
	if !in.Known || !prev.Firing {
		st.FirstSeen = now // a new firing period
		st.Investigations = 0
	}
	st.Firing = true
	inFlight := in.AgentInFlight
	stale := ""
	if in.Known && prev.InFlight {
		age := now.Sub(prev.LastInvestigated)
		if in.StaleAfter <= 0 || age < in.StaleAfter {
			d.InvestigationID = prev.InvestigationID
			if in.NewMember {
				return with(d, Joined, fmt.Sprintf("also firing: joined investigation %s of incident %s (in flight for %s)", prev.InvestigationID, in.Key, round(age))), st
			}
			return with(d, Deduped, fmt.Sprintf("investigation %s of this alert in flight for %s", prev.InvestigationID, round(age))), st
		}
		// Presumed lost: its slot is this alert's, so it does not count.
		stale = fmt.Sprintf("; investigation %s presumed lost after %s", prev.InvestigationID, round(age))
		st.InFlight = false
		if prev.Agent == in.Route.Agent && inFlight > 0 {
			inFlight--
		}
	}

	why := "new alert"
	if in.Known && !prev.LastInvestigated.IsZero() {
		since := now.Sub(prev.LastInvestigated)
		changed := prev.ContentHash != a.Hash
		standing := prev.Firing && prev.Investigations >= 1
		switch {
		case since < in.Route.Cooldown:
			reason := fmt.Sprintf("investigated %s ago; cooldown %s, eligible at %s", round(since), in.Route.Cooldown, prev.LastInvestigated.Add(in.Route.Cooldown).UTC().Format(time.RFC3339))
			if changed {
				reason += " (content changed since)"
			}
			return with(d, Cooldown, reason+stale), st
		case standing && !changed:
			wait := Backoff(in.Route.Cooldown, prev.Investigations)
			if since < wait {
				return with(d, Cooldown, fmt.Sprintf("standing alert unchanged since investigation #%d %s ago; backoff %s, next at %s",
					prev.Investigations, round(since), wait, prev.LastInvestigated.Add(wait).UTC().Format(time.RFC3339))+stale), st
			}
			why = fmt.Sprintf("standing alert: backoff %s elapsed since investigation #%d", wait, prev.Investigations)
		case standing && changed:
			why = "standing alert changed (labels or annotations)"
		default:
			why = fmt.Sprintf("firing again; last investigated %s ago", round(since))
		}
	} else if in.Known && prev.Pending {
		why = fmt.Sprintf("queued since %s", prev.FirstSeen.UTC().Format(time.RFC3339))
	}

	maxIn := max(in.Route.MaxInFlight, 1)
	if inFlight >= maxIn {
		st.Pending = true
		return with(d, Busy, fmt.Sprintf("%s; agent %s has %d/%d alert run(s) in flight: queued, retried when it frees up", why, in.Route.Agent, inFlight, maxIn)+stale), st
	}
	d.InvestigationID = in.NewID
	st.InFlight = true
	st.Pending = false
	st.InvestigationID = in.NewID
	st.LastInvestigated = now
	st.Investigations++
	st.ContentHash = a.Hash
	return with(d, Dispatched, why+stale), st
}

// resolve decides a resolved alert: it closes its incident unless others
// of it still fire (in the same webhook).
func resolve(in Input, d store.AlertDecision, st store.AlertState) (store.AlertDecision, store.AlertState) {
	prev := in.Prev
	if in.OthersFiring > 0 {
		return with(d, Resolved, fmt.Sprintf("resolved; incident %s stays open: %d other alert(s) of it still firing", in.Key, in.OthersFiring)), prev
	}
	reason := "resolved: never investigated"
	if in.Known && prev.Investigations > 0 {
		reason = fmt.Sprintf("resolved: standing state closed after %d investigation(s)", prev.Investigations)
	}
	if prev.Pending {
		reason += "; dropped from the busy queue"
	}
	if in.Known && prev.InFlight {
		reason += fmt.Sprintf("; investigation %s still running", prev.InvestigationID)
	}
	st.Firing = false
	st.Pending = false
	st.Investigations = 0
	return with(d, Resolved, reason), st
}

func with(d store.AlertDecision, decision, reason string) store.AlertDecision {
	d.Decision = decision
	d.Reason = reason
	return d
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// Retry decides a queued (busy) alert again when its agent frees a slot. An
// alert no longer queued — dispatched, resolved or ignored meanwhile — is
// left as it is (recorded as deduped); otherwise it is Decide.
func Retry(in Input) (store.AlertDecision, store.AlertState) {
	if !in.Known || !in.Prev.Pending || !in.Prev.Firing {
		d := store.AlertDecision{
			ID:              in.DecisionID,
			Fingerprint:     in.Alert.Fingerprint,
			Alertname:       in.Alert.Alertname,
			Status:          in.Alert.Status,
			Agent:           in.Route.Agent,
			At:              in.Now,
			InvestigationID: in.Prev.InvestigationID,
		}
		return with(d, Deduped, "retry skipped: alert no longer queued"), in.Prev
	}
	in.Alert.Status = StatusFiring
	d, st := Decide(in)
	if d.Decision == Dispatched {
		d.Reason = "retry: agent freed a slot; " + d.Reason
	}
	return d, st
}

// Drop decides an incident out of its agent's full busy queue: no longer
// pending, retried only when one of its alerts comes again.
func Drop(in Input, why string) (store.AlertDecision, store.AlertState) {
	d := store.AlertDecision{
		ID:          in.DecisionID,
		Fingerprint: in.Alert.Fingerprint,
		Alertname:   in.Alert.Alertname,
		Status:      StatusFiring,
		Agent:       in.Route.Agent,
		At:          in.Now,
	}
	st := in.Prev
	st.Pending = false
	if !in.Known || !in.Prev.Pending {
		return with(d, Deduped, "drop skipped: incident no longer queued"), in.Prev
	}
	return with(d, Dropped, why), st
}

// Package killswitch is the fleet's kill switch as the APIs show and take
// it (docs/MANUAL.md, "The action envelope"): the line every refusal reads, the
// PUT body's checks, the JSON view. The agents' envelope and the core share
// it.
package killswitch

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Parse checks the body of a PUT to the kill switch (the agent's
// /actions, the core's /api/v1/actions): paused is required and a pause
// needs a reason. by defaults to defaultBy. The error is the 400 message.
func Parse(in api.ActionsSwitch, defaultBy string) (store.ActionsState, error) {
	if in.Paused == nil {
		return store.ActionsState{}, errors.New(`"paused" is required: {"paused": true, "reason": "…", "by": "…"} or {"paused": false}`)
	}
	if in.At != nil || in.Line != "" {
		return store.ActionsState{}, errors.New(`"at" and "line" are set by the server`)
	}
	st := store.ActionsState{Paused: *in.Paused, Reason: strings.TrimSpace(in.Reason), By: strings.TrimSpace(in.By)}
	if st.Paused && st.Reason == "" {
		return store.ActionsState{}, errors.New(`a pause needs a "reason": it is what every refused action will say`)
	}
	if len(st.Reason) > 500 || len(st.By) > 100 {
		return store.ActionsState{}, errors.New(`"reason" is at most 500 and "by" at most 100 characters`)
	}
	if st.By == "" {
		st.By = defaultBy
	}
	return st, nil
}

// View renders the kill switch for the APIs.
func View(st store.ActionsState) api.ActionsSwitch {
	paused := st.Paused
	v := api.ActionsSwitch{Paused: &paused, Reason: st.Reason, By: st.By}
	if !st.At.IsZero() {
		at := st.At
		v.At = &at
	}
	if st.Paused {
		v.Line = Line(st)
	}
	return v
}

// Line is how a paused state reads everywhere: "paused by <who> at
// <when>: <reason>".
func Line(st store.ActionsState) string {
	by := st.By
	if by == "" {
		by = "an operator"
	}
	reason := st.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("paused by %s at %s: %s", by, st.At.UTC().Format(time.RFC3339), reason)
}

package api

import "testing"

func TestDelegationOutcome(t *testing.T) {
	for _, tt := range []struct {
		d    Delegation
		want string
	}{
		{Delegation{Sent: true, Verdict: VerdictActionTaken}, VerdictDelegated},
		{Delegation{Sent: true}, VerdictDelegated}, // a delegate outside the fleet, no verdict
		{Delegation{Sent: true, Verdict: VerdictRefused, Result: "Refused: settle window"}, VerdictDelegationRefused},
		{Delegation{Sent: true, Verdict: "recommendation"}, VerdictDelegationRefused},
		{Delegation{Sent: true, Verdict: VerdictActionFailed}, VerdictDelegationFailed},
		{Delegation{Sent: true, Verdict: VerdictActionTaken, Error: "k8s-engineer's run ended failed"}, VerdictDelegationFailed},
		{Delegation{Error: "not sent: no such host"}, VerdictDelegationFailed},
	} {
		if got := tt.d.Outcome(); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.d, got, tt.want)
		}
	}
}

package a2a

import (
	"errors"
	"fmt"
)

// DefaultMaxDepth is MAX_SOCIAL_DEPTH's default.
const DefaultMaxDepth = 5

// ErrRefused is wrapped by every refusal of the depth and cycle rules, on
// either side of a call.
var ErrRefused = errors.New("refused")

// RefusalError says why a message was not sent or not accepted.
type RefusalError struct {
	// Rule is "depth" or "cycle".
	Rule string
	Msg  string
}

func (e *RefusalError) Error() string { return "refused: " + e.Msg }

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusalError) Unwrap() error { return ErrRefused }

// maxOr returns max, or DefaultMaxDepth when max is not positive (an unset
// limit must not mean "no limit").
func maxOr(max int) int {
	if max <= 0 {
		return DefaultMaxDepth
	}
	return max
}

// OutgoingDepth is the depth of a message sent from a run at runDepth.
func OutgoingDepth(runDepth int) int { return runDepth + 1 }

// CheckSend refuses, before anything is sent, a message that would arrive
// at depth ≥ max.
func CheckSend(depth, max int) error {
	max = maxOr(max)
	if depth >= max {
		return &RefusalError{Rule: "depth", Msg: fmt.Sprintf(
			"this message would be at social depth %d and MAX_SOCIAL_DEPTH is %d: the chain of agents asking agents is too long; answer with what you have instead of calling another agent",
			depth, max)}
	}
	return nil
}

// ReceivedDepth is the depth a receiver assumes for a message. A message
// from another agent (caller set) without a depth counts as max depth —
// fail closed; a message with neither is a person or an external client
// at depth 0.
func ReceivedDepth(m Meta, max int) int {
	max = maxOr(max)
	switch {
	case m.HasDepth:
		return m.Depth
	case m.Caller != "":
		return max
	default:
		return 0
	}
}

// CheckReceive refuses a received message at depth ≥ max.
func CheckReceive(m Meta, max int) (depth int, err error) {
	max = maxOr(max)
	depth = ReceivedDepth(m, max)
	if depth < max {
		return depth, nil
	}
	why := fmt.Sprintf("social depth %d reaches MAX_SOCIAL_DEPTH %d", depth, max)
	if !m.HasDepth {
		why = fmt.Sprintf("the message from %q carries no %s, so it counts as depth %d (MAX_SOCIAL_DEPTH)", m.Caller, KeySocialDepth, max)
	}
	return depth, &RefusalError{Rule: "depth", Msg: why}
}

// CycleError refuses a discussion coming back to an agent already working on
// it (A→B→A).
func CycleError(agent, discussionID, runID string) error {
	return &RefusalError{Rule: "cycle", Msg: fmt.Sprintf(
		"%s is already working on discussion %s (run %s): a message may not come back to an agent in the same discussion (cycle)",
		agent, discussionID, runID)}
}

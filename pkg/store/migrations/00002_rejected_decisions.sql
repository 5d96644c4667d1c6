-- +goose Up
-- A malformed alert gets its own decision, rejected, with the reason; the
-- rest of its group is decided (README, "The core").
ALTER TABLE alert_decisions DROP CONSTRAINT alert_decisions_decision_check;
ALTER TABLE alert_decisions ADD CONSTRAINT alert_decisions_decision_check
    CHECK (decision IN ('dispatched', 'deduped', 'cooldown', 'busy', 'ignored', 'resolved', 'rejected'));

-- +goose Down
DELETE FROM alert_decisions WHERE decision = 'rejected';
ALTER TABLE alert_decisions DROP CONSTRAINT alert_decisions_decision_check;
ALTER TABLE alert_decisions ADD CONSTRAINT alert_decisions_decision_check
    CHECK (decision IN ('dispatched', 'deduped', 'cooldown', 'busy', 'ignored', 'resolved'));

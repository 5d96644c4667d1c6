-- +goose Up
-- Storms coalesce (README, "Storms"): an alert that joins an incident's
-- running investigation is recorded joined; an incident dropped from a full
-- busy queue is recorded dropped.
ALTER TABLE alert_decisions DROP CONSTRAINT alert_decisions_decision_check;
ALTER TABLE alert_decisions ADD CONSTRAINT alert_decisions_decision_check
    CHECK (decision IN ('dispatched', 'deduped', 'cooldown', 'busy', 'ignored', 'resolved', 'rejected', 'joined', 'dropped'));

-- +goose Down
DELETE FROM alert_decisions WHERE decision IN ('joined', 'dropped');
ALTER TABLE alert_decisions DROP CONSTRAINT alert_decisions_decision_check;
ALTER TABLE alert_decisions ADD CONSTRAINT alert_decisions_decision_check
    CHECK (decision IN ('dispatched', 'deduped', 'cooldown', 'busy', 'ignored', 'resolved', 'rejected'));

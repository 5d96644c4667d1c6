-- +goose Up
-- The hot path does not write per repeat (README, "Repeats are counted, not
-- written"): repeats of a known alert inside its cooldown or dedupe are
-- counted in memory and flushed as one row per alert and decision, with how
-- many there were and when the first was seen (at is the last).
ALTER TABLE alert_decisions ADD COLUMN count integer NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE alert_decisions ADD COLUMN first_at timestamptz;

-- +goose Down
ALTER TABLE alert_decisions DROP COLUMN first_at;
ALTER TABLE alert_decisions DROP COLUMN count;

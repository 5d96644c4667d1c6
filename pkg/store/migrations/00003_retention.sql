-- +goose Up
-- Retention (RETENTION, README "Retention") deletes the oldest rows in
-- small batches. Decisions, findings, the A2A log, runs and investigations
-- are found through their newest-first indexes (scanned backwards), trace
-- events through their primary key (by run id); alert states need one more.
CREATE INDEX alert_state_last_seen ON alert_state (last_seen) WHERE NOT in_flight;

-- +goose Down
DROP INDEX alert_state_last_seen;

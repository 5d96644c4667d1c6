-- +goose NO TRANSACTION
-- +goose Up
-- The alerts firing are each alert's newest decision (README.md,
-- "Dashboard"; store.ListFiring): this index finds the distinct
-- fingerprints and each one's newest decision with one descent each. It
-- is built CONCURRENTLY: an older core still writing decisions during an
-- upgrade is not blocked while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS alert_decisions_fingerprint ON alert_decisions (fingerprint, at DESC, id DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS alert_decisions_fingerprint;

-- +goose Up
-- Verify, then escalate (README, "The action envelope"): every follow-up
-- check of an action that was done, and the ledger of incidents paged to a
-- human, one row per correlation key, so each pages once and resolves once.
CREATE TABLE action_checks (
    id        text PRIMARY KEY,
    action_id text NOT NULL,
    agent     text NOT NULL,
    namespace text NOT NULL DEFAULT '',
    kind      text NOT NULL DEFAULT '',
    name      text NOT NULL DEFAULT '',
    container text NOT NULL DEFAULT '',
    status    text NOT NULL CHECK (status IN ('fixed', 'not_fixed', 'unknown')),
    detail    text NOT NULL DEFAULT '',
    page_key  text NOT NULL DEFAULT '',
    paged     text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL
);
CREATE INDEX action_checks_action ON action_checks (action_id, at DESC);
CREATE INDEX action_checks_at ON action_checks (at DESC, id DESC);

CREATE TABLE pages (
    key         text PRIMARY KEY,
    target      text NOT NULL DEFAULT '',
    origin      text NOT NULL DEFAULT '',
    summary     text NOT NULL DEFAULT '',
    link        text NOT NULL DEFAULT '',
    opened_at   timestamptz NOT NULL,
    resolved_at timestamptz,
    note        text NOT NULL DEFAULT ''
);
CREATE INDEX pages_open ON pages (opened_at DESC) WHERE resolved_at IS NULL;

-- +goose Down
DROP TABLE pages;
DROP TABLE action_checks;

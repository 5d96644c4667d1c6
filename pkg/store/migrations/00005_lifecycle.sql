-- +goose Up
-- Findings have a life (README.md, "Findings have a life"): one row per
-- finding, identified by its cluster and key, open from the sweep that first
-- saw it until a sweep that covered it no longer does.
CREATE TABLE finding_states (
    cluster     text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    kind        text NOT NULL DEFAULT '',
    reason      text NOT NULL DEFAULT '',
    severity    text NOT NULL DEFAULT '',
    agent       text NOT NULL DEFAULT '',
    run_id      text NOT NULL DEFAULT '',
    state       text NOT NULL CHECK (state IN ('open', 'resolved')),
    reopened    integer NOT NULL DEFAULT 0,
    finding     jsonb NOT NULL,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    resolved_at timestamptz,
    PRIMARY KEY (cluster, key)
);
CREATE INDEX finding_states_newest ON finding_states (first_seen DESC, cluster DESC, key DESC);
CREATE INDEX finding_states_open ON finding_states (cluster, namespace) WHERE state = 'open';

-- A chat post's thread (the core's investigation posts): a resolved alert's
-- follow-up goes to the same thread where the chat has threads.
ALTER TABLE delivery_stamps ADD COLUMN thread text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE delivery_stamps DROP COLUMN thread;
DROP TABLE finding_states;

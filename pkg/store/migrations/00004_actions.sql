-- +goose Up
-- The action envelope (README, "The action envelope"): the fleet's kill
-- switch (one row) and every decision on a mutating primitive, which the
-- budgets count and the proposal lists show.
CREATE TABLE actions_state (
    id      integer PRIMARY KEY CHECK (id = 1),
    paused  boolean NOT NULL,
    reason  text NOT NULL DEFAULT '',
    by_whom text NOT NULL DEFAULT '',
    at      timestamptz
);

CREATE TABLE actions (
    id        text PRIMARY KEY,
    agent     text NOT NULL,
    run_id    text NOT NULL DEFAULT '',
    action    text NOT NULL,
    namespace text NOT NULL DEFAULT '',
    kind      text NOT NULL DEFAULT '',
    name      text NOT NULL DEFAULT '',
    container text NOT NULL DEFAULT '',
    outcome   text NOT NULL CHECK (outcome IN ('done', 'proposed', 'recommended', 'refused')),
    old_value text NOT NULL DEFAULT '',
    new_value text NOT NULL DEFAULT '',
    change    text NOT NULL DEFAULT '',
    why       text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL
);
CREATE INDEX actions_workload ON actions (namespace, kind, name, action, at DESC);
CREATE INDEX actions_at ON actions (at DESC, id DESC);

-- +goose Down
DROP TABLE actions;
DROP TABLE actions_state;

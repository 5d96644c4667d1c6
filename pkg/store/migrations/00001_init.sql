-- +goose Up
CREATE TABLE runs (
    id                text COLLATE "C" PRIMARY KEY,
    agent             text NOT NULL,
    workflow_type     text NOT NULL DEFAULT '',
    task              text COLLATE "C" NOT NULL DEFAULT '',
    context           jsonb,
    caller            text NOT NULL DEFAULT '',
    social_depth      integer NOT NULL DEFAULT 0,
    discussion_id     text NOT NULL DEFAULT '',
    status            text NOT NULL,
    answer            text NOT NULL DEFAULT '',
    verdict           text NOT NULL DEFAULT '',
    findings          jsonb,
    iterations        integer NOT NULL DEFAULT 0,
    prompt_tokens     integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    error             text NOT NULL DEFAULT '',
    delegation        jsonb,
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz
);
CREATE INDEX runs_newest ON runs (started_at DESC, id DESC);
CREATE INDEX runs_agent_newest ON runs (agent, started_at DESC, id DESC);

-- data is json, not jsonb: a trace keeps the bytes it was given.
CREATE TABLE run_events (
    run_id text NOT NULL,
    seq    integer NOT NULL,
    at     timestamptz NOT NULL,
    type   text NOT NULL,
    data   json,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE findings (
    id      text COLLATE "C" PRIMARY KEY,
    run_id  text NOT NULL,
    agent   text NOT NULL,
    finding jsonb NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX findings_newest ON findings (at DESC, id DESC);
CREATE INDEX findings_agent_newest ON findings (agent, at DESC, id DESC);
CREATE INDEX findings_run ON findings (run_id);

CREATE TABLE pulse_state (
    agent    text NOT NULL,
    task     text COLLATE "C" NOT NULL,
    last_run timestamptz NOT NULL,
    outcome  text NOT NULL DEFAULT '',
    run_id   text NOT NULL DEFAULT '',
    PRIMARY KEY (agent, task)
);

CREATE TABLE pulse_lock (
    agent      text PRIMARY KEY,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE TABLE memory_files (
    agent      text NOT NULL,
    path       text COLLATE "C" NOT NULL CHECK (path ~ '^/memories/[a-z0-9][a-z0-9._-]*\.md$' AND path NOT LIKE '%..%'),
    content    text NOT NULL CHECK (octet_length(content) <= 65536),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (agent, path)
);

CREATE TABLE a2a_log (
    id            text COLLATE "C" PRIMARY KEY,
    agent         text NOT NULL,
    direction     text NOT NULL DEFAULT '',
    verb          text NOT NULL DEFAULT '',
    caller        text NOT NULL DEFAULT '',
    callee        text NOT NULL DEFAULT '',
    depth         integer NOT NULL DEFAULT 0,
    discussion_id text NOT NULL DEFAULT '',
    trace_id      text NOT NULL DEFAULT '',
    text          text NOT NULL DEFAULT '',
    data          json,
    outcome       text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    caller_run_id text NOT NULL DEFAULT '',
    callee_run_id text NOT NULL DEFAULT '',
    answer        text NOT NULL DEFAULT '',
    at            timestamptz NOT NULL,
    finished_at   timestamptz
);
CREATE INDEX a2a_newest ON a2a_log (at DESC, id DESC);
CREATE INDEX a2a_agent_newest ON a2a_log (agent, at DESC, id DESC);

CREATE TABLE delivery_stamps (
    agent     text NOT NULL,
    task      text COLLATE "C" NOT NULL,
    target    text NOT NULL,
    body_hash text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL,
    PRIMARY KEY (agent, task, target)
);

-- One row per alert fingerprint: the dedupe/cooldown claim. ApplyAlert
-- serialises on advisory locks of the agent and the fingerprint.
CREATE TABLE alert_state (
    fingerprint       text COLLATE "C" PRIMARY KEY,
    alertname         text NOT NULL DEFAULT '',
    agent             text NOT NULL,
    firing            boolean NOT NULL DEFAULT false,
    content_hash      text NOT NULL DEFAULT '',
    first_seen        timestamptz NOT NULL,
    last_seen         timestamptz NOT NULL,
    last_investigated timestamptz,
    investigations    integer NOT NULL DEFAULT 0,
    in_flight         boolean NOT NULL DEFAULT false,
    investigation_id  text NOT NULL DEFAULT '',
    pending           boolean NOT NULL DEFAULT false
);
CREATE INDEX alert_state_in_flight ON alert_state (agent) WHERE in_flight;
CREATE INDEX alert_state_investigation ON alert_state (investigation_id) WHERE in_flight;
CREATE INDEX alert_state_pending ON alert_state (agent, first_seen, fingerprint) WHERE pending;

CREATE TABLE alert_decisions (
    id               text COLLATE "C" PRIMARY KEY,
    fingerprint      text NOT NULL,
    alertname        text NOT NULL DEFAULT '',
    status           text NOT NULL DEFAULT '',
    decision         text NOT NULL CHECK (decision IN ('dispatched', 'deduped', 'cooldown', 'busy', 'ignored', 'resolved')),
    agent            text NOT NULL DEFAULT '',
    investigation_id text NOT NULL DEFAULT '',
    reason           text NOT NULL DEFAULT '',
    at               timestamptz NOT NULL
);
CREATE INDEX alert_decisions_newest ON alert_decisions (at DESC, id DESC);

CREATE TABLE investigations (
    id          text COLLATE "C" PRIMARY KEY,
    fingerprint text NOT NULL,
    alertname   text NOT NULL DEFAULT '',
    agent       text NOT NULL,
    run_id      text NOT NULL DEFAULT '',
    status      text NOT NULL,
    findings    jsonb,
    answer      text NOT NULL DEFAULT '',
    error       text NOT NULL DEFAULT '',
    alert       bytea,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz
);
CREATE INDEX investigations_newest ON investigations (started_at DESC, id DESC);

-- +goose Down
DROP TABLE investigations;
DROP TABLE alert_decisions;
DROP TABLE alert_state;
DROP TABLE delivery_stamps;
DROP TABLE a2a_log;
DROP TABLE memory_files;
DROP TABLE pulse_lock;
DROP TABLE pulse_state;
DROP TABLE findings;
DROP TABLE run_events;
DROP TABLE runs;

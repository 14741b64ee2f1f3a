-- bench storage schema, version 1 (SQLite).
-- Timestamps are UTC text "YYYY-MM-DD HH:MM:SS.ffffff".
-- Statuses are the names of environments.Status.

-- +goose Up
CREATE TABLE experiment (
    exp_id          TEXT NOT NULL PRIMARY KEY,
    description     TEXT,
    root_env_config TEXT NOT NULL,
    git_repo        TEXT NOT NULL,
    git_commit      TEXT NOT NULL,
    ts_start        TIMESTAMP,
    ts_end          TIMESTAMP,
    status          TEXT,
    driver_name     TEXT,
    driver_pid      INTEGER
);

CREATE TABLE objectives (
    exp_id                 TEXT NOT NULL REFERENCES experiment (exp_id),
    optimization_target    TEXT NOT NULL,
    -- position of the target in the experiment's list (opt_target_<i>)
    ordinal                INTEGER NOT NULL DEFAULT 0,
    optimization_direction TEXT NOT NULL CHECK (optimization_direction IN ('min', 'max')),
    weight                 REAL,
    PRIMARY KEY (exp_id, optimization_target)
);

CREATE TABLE config (
    config_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    config_hash TEXT NOT NULL UNIQUE
);

CREATE TABLE config_param (
    config_id   INTEGER NOT NULL REFERENCES config (config_id),
    param_id    TEXT NOT NULL,
    param_value TEXT,
    PRIMARY KEY (config_id, param_id)
);

CREATE TABLE trial (
    exp_id          TEXT NOT NULL REFERENCES experiment (exp_id),
    trial_id        INTEGER NOT NULL,
    config_id       INTEGER NOT NULL REFERENCES config (config_id),
    trial_runner_id INTEGER,
    ts_start        TIMESTAMP NOT NULL,
    ts_end          TIMESTAMP,
    status          TEXT NOT NULL,
    failure_reason  TEXT,
    PRIMARY KEY (exp_id, trial_id),
    -- A trial has an end time exactly when its status is final.
    CHECK ((ts_end IS NULL AND status IN ('UNKNOWN', 'PENDING', 'READY', 'RUNNING'))
        OR (ts_end IS NOT NULL AND status IN ('SUCCEEDED', 'CANCELED', 'FAILED', 'TIMED_OUT')))
);
CREATE INDEX trial_config_idx ON trial (config_id);

CREATE TABLE trial_param (
    exp_id      TEXT NOT NULL,
    trial_id    INTEGER NOT NULL,
    param_id    TEXT NOT NULL,
    param_value TEXT,
    PRIMARY KEY (exp_id, trial_id, param_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);

CREATE TABLE trial_status (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    exp_id   TEXT NOT NULL,
    trial_id INTEGER NOT NULL,
    ts       TIMESTAMP NOT NULL,
    status   TEXT NOT NULL,
    UNIQUE (exp_id, trial_id, ts, status),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);

CREATE TABLE trial_result (
    exp_id       TEXT NOT NULL,
    trial_id     INTEGER NOT NULL,
    metric_id    TEXT NOT NULL,
    metric_value TEXT,
    PRIMARY KEY (exp_id, trial_id, metric_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);

CREATE TABLE trial_telemetry (
    exp_id       TEXT NOT NULL,
    trial_id     INTEGER NOT NULL,
    ts           TIMESTAMP NOT NULL,
    metric_id    TEXT NOT NULL,
    metric_value TEXT,
    PRIMARY KEY (exp_id, trial_id, ts, metric_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);

CREATE TABLE trial_output (
    exp_id      TEXT NOT NULL,
    trial_id    INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    phase       TEXT NOT NULL,
    env_name    TEXT NOT NULL,
    line        INTEGER NOT NULL,
    command     TEXT NOT NULL,
    exit_code   INTEGER NOT NULL,
    stdout      TEXT NOT NULL,
    stderr      TEXT NOT NULL,
    truncated   BOOLEAN NOT NULL,
    ts_start    TIMESTAMP,
    duration_ns INTEGER NOT NULL,
    PRIMARY KEY (exp_id, trial_id, seq),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);

-- +goose Down
DROP TABLE trial_output;
DROP TABLE trial_telemetry;
DROP TABLE trial_result;
DROP TABLE trial_status;
DROP TABLE trial_param;
DROP TABLE trial;
DROP TABLE config_param;
DROP TABLE config;
DROP TABLE objectives;
DROP TABLE experiment;

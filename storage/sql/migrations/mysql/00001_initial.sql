-- bench storage schema, version 1 (MySQL 8 / MariaDB 10.6 and later).
-- Timestamps are DATETIME(6) holding UTC (microseconds).
-- Statuses are the names of environments.Status.
-- Key columns are VARCHAR(255) (MySQL indexes no unbounded TEXT); the
-- binary collation compares text exactly, as the other databases do.
-- Foreign keys are table constraints: InnoDB ignores a column's REFERENCES.

-- +goose Up
CREATE TABLE experiment (
    exp_id          VARCHAR(255) NOT NULL PRIMARY KEY,
    description     LONGTEXT,
    root_env_config LONGTEXT NOT NULL,
    git_repo        LONGTEXT NOT NULL,
    git_commit      LONGTEXT NOT NULL,
    ts_start        DATETIME(6),
    ts_end          DATETIME(6),
    status          VARCHAR(16),
    driver_name     LONGTEXT,
    driver_pid      INTEGER
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE objectives (
    exp_id                 VARCHAR(255) NOT NULL,
    optimization_target    VARCHAR(255) NOT NULL,
    -- position of the target in the experiment's list (opt_target_<i>)
    ordinal                INTEGER NOT NULL DEFAULT 0,
    optimization_direction VARCHAR(3) NOT NULL CHECK (optimization_direction IN ('min', 'max')),
    weight                 DOUBLE,
    PRIMARY KEY (exp_id, optimization_target),
    FOREIGN KEY (exp_id) REFERENCES experiment (exp_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE config (
    config_id   BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    config_hash VARCHAR(255) NOT NULL UNIQUE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE config_param (
    config_id   BIGINT NOT NULL,
    param_id    VARCHAR(255) NOT NULL,
    param_value LONGTEXT,
    PRIMARY KEY (config_id, param_id),
    FOREIGN KEY (config_id) REFERENCES config (config_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial (
    exp_id          VARCHAR(255) NOT NULL,
    trial_id        INTEGER NOT NULL,
    config_id       BIGINT NOT NULL,
    trial_runner_id INTEGER,
    ts_start        DATETIME(6) NOT NULL,
    ts_end          DATETIME(6),
    status          VARCHAR(16) NOT NULL,
    failure_reason  LONGTEXT,
    PRIMARY KEY (exp_id, trial_id),
    INDEX trial_config_idx (config_id),
    FOREIGN KEY (exp_id) REFERENCES experiment (exp_id),
    FOREIGN KEY (config_id) REFERENCES config (config_id),
    -- A trial has an end time exactly when its status is final.
    CONSTRAINT trial_end_status CHECK ((ts_end IS NULL AND status IN ('UNKNOWN', 'PENDING', 'READY', 'RUNNING'))
        OR (ts_end IS NOT NULL AND status IN ('SUCCEEDED', 'CANCELED', 'FAILED', 'TIMED_OUT')))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial_param (
    exp_id      VARCHAR(255) NOT NULL,
    trial_id    INTEGER NOT NULL,
    param_id    VARCHAR(255) NOT NULL,
    param_value LONGTEXT,
    PRIMARY KEY (exp_id, trial_id, param_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial_status (
    id       BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    exp_id   VARCHAR(255) NOT NULL,
    trial_id INTEGER NOT NULL,
    ts       DATETIME(6) NOT NULL,
    status   VARCHAR(16) NOT NULL,
    UNIQUE (exp_id, trial_id, ts, status),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial_result (
    exp_id       VARCHAR(255) NOT NULL,
    trial_id     INTEGER NOT NULL,
    metric_id    VARCHAR(255) NOT NULL,
    metric_value LONGTEXT,
    PRIMARY KEY (exp_id, trial_id, metric_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial_telemetry (
    exp_id       VARCHAR(255) NOT NULL,
    trial_id     INTEGER NOT NULL,
    ts           DATETIME(6) NOT NULL,
    metric_id    VARCHAR(255) NOT NULL,
    metric_value LONGTEXT,
    PRIMARY KEY (exp_id, trial_id, ts, metric_id),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE trial_output (
    exp_id      VARCHAR(255) NOT NULL,
    trial_id    INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    phase       LONGTEXT NOT NULL,
    env_name    LONGTEXT NOT NULL,
    line        INTEGER NOT NULL,
    command     LONGTEXT NOT NULL,
    exit_code   INTEGER NOT NULL,
    stdout      LONGTEXT NOT NULL,
    stderr      LONGTEXT NOT NULL,
    truncated   BOOLEAN NOT NULL,
    ts_start    DATETIME(6),
    duration_ns BIGINT NOT NULL,
    PRIMARY KEY (exp_id, trial_id, seq),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

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

-- bench storage schema, version 2 (MySQL): several bench processes work on
-- one experiment. Trials get an owner with a lease (claims), a link to the
-- trial they retry or whose result they reuse, and stop requests.

-- +goose Up
-- owner: the bench process running this unfinished trial (NULL: nobody);
-- lease_until: until when its claim holds (NULL: no lease).
ALTER TABLE trial ADD COLUMN owner VARCHAR(255);
ALTER TABLE trial ADD COLUMN lease_until DATETIME(6);
-- retry_of: trial id (same experiment) of the original trial this one retries.
ALTER TABLE trial ADD COLUMN retry_of INTEGER;
-- reused_exp_id, reused_trial_id: the trial whose result this one reused.
ALTER TABLE trial ADD COLUMN reused_exp_id VARCHAR(255);
ALTER TABLE trial ADD COLUMN reused_trial_id INTEGER;
-- stop_requested: when `bench stop EXPERIMENT TRIAL` asked the trial to stop.
ALTER TABLE trial ADD COLUMN stop_requested DATETIME(6);
-- stop_requested: when `bench stop EXPERIMENT` asked the experiment to stop.
ALTER TABLE experiment ADD COLUMN stop_requested DATETIME(6);
-- timed_out: the command was stopped at its time limit.
ALTER TABLE trial_output ADD COLUMN timed_out BOOLEAN NOT NULL DEFAULT FALSE;
-- The unfinished trials of an experiment by id: what Claim, Heartbeat,
-- PendingTrials and StopRequests scan (MySQL has no partial index; the
-- unfinished ones are those with ts_end NULL).
CREATE INDEX trial_unfinished_idx ON trial (exp_id, ts_end, trial_id);
-- The bench worker processes of an experiment, with how many trial runners
-- each has, until when they are known to be alive (renewed by their
-- heartbeat): the driver keeps that many trials queued for them.
CREATE TABLE worker (
    exp_id      VARCHAR(255) NOT NULL,
    owner       VARCHAR(255) NOT NULL,
    runners     INTEGER NOT NULL,
    lease_until DATETIME(6) NOT NULL,
    PRIMARY KEY (exp_id, owner),
    FOREIGN KEY (exp_id) REFERENCES experiment (exp_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE worker;
DROP INDEX trial_unfinished_idx ON trial;
ALTER TABLE trial_output DROP COLUMN timed_out;
ALTER TABLE experiment DROP COLUMN stop_requested;
ALTER TABLE trial DROP COLUMN stop_requested;
ALTER TABLE trial DROP COLUMN reused_trial_id;
ALTER TABLE trial DROP COLUMN reused_exp_id;
ALTER TABLE trial DROP COLUMN retry_of;
ALTER TABLE trial DROP COLUMN lease_until;
ALTER TABLE trial DROP COLUMN owner;

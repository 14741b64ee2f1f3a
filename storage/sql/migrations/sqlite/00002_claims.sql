-- bench storage schema, version 2 (SQLite): several bench processes work
-- on one experiment. Trials get an owner with a lease (claims), a link to
-- the trial they retry or whose result they reuse, and stop requests.

-- +goose Up
-- owner: the bench process running this unfinished trial (NULL: nobody);
-- lease_until: until when its claim holds (NULL: no lease).
ALTER TABLE trial ADD COLUMN owner TEXT;
ALTER TABLE trial ADD COLUMN lease_until TIMESTAMP;
-- retry_of: trial id (same experiment) of the original trial this one retries.
ALTER TABLE trial ADD COLUMN retry_of INTEGER;
-- reused_exp_id, reused_trial_id: the trial whose result this one reused.
ALTER TABLE trial ADD COLUMN reused_exp_id TEXT;
ALTER TABLE trial ADD COLUMN reused_trial_id INTEGER;
-- stop_requested: when `bench stop EXPERIMENT TRIAL` asked the trial to stop.
ALTER TABLE trial ADD COLUMN stop_requested TIMESTAMP;
-- stop_requested: when `bench stop EXPERIMENT` asked the experiment to stop.
ALTER TABLE experiment ADD COLUMN stop_requested TIMESTAMP;
-- timed_out: the command was stopped at its time limit (0/1, like truncated).
ALTER TABLE trial_output ADD COLUMN timed_out BOOLEAN NOT NULL DEFAULT FALSE;
-- The unfinished trials of an experiment by id: what Claim, Heartbeat,
-- PendingTrials and StopRequests scan.
CREATE INDEX trial_unfinished_idx ON trial (exp_id, trial_id) WHERE ts_end IS NULL;
-- The bench worker processes of an experiment, with how many trial runners
-- each has, until when they are known to be alive (renewed by their
-- heartbeat): the driver keeps that many trials queued for them.
CREATE TABLE worker (
    exp_id      TEXT NOT NULL REFERENCES experiment (exp_id),
    owner       TEXT NOT NULL,
    runners     INTEGER NOT NULL,
    lease_until TIMESTAMP NOT NULL,
    PRIMARY KEY (exp_id, owner)
);

-- +goose Down
DROP TABLE worker;
DROP INDEX trial_unfinished_idx;
ALTER TABLE trial_output DROP COLUMN timed_out;
ALTER TABLE experiment DROP COLUMN stop_requested;
ALTER TABLE trial DROP COLUMN stop_requested;
ALTER TABLE trial DROP COLUMN reused_trial_id;
ALTER TABLE trial DROP COLUMN reused_exp_id;
ALTER TABLE trial DROP COLUMN retry_of;
ALTER TABLE trial DROP COLUMN lease_until;
ALTER TABLE trial DROP COLUMN owner;

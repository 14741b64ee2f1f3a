// Package storage records experiments and their trials: what the scheduler
// writes while it runs (trials queued, started, finished with their results,
// telemetry and captured output) and what it reads back to resume an
// experiment, and what the CLI shows (`bench results`, `bench show`).
//
// The tables follow mlos_bench's storage (experiments, objectives, configs
// deduplicated by hash, trials with a status history, parameters, results,
// telemetry) plus each trial's captured output and failure reason. The SQL
// implementation lives in storage/sql, which registers the "sqlite",
// "postgresql" and "mysql" backends that Open picks from Config.DriverName.
//
// Guarantees every implementation keeps:
//   - A trial's final update (Finish) is one transaction: status, end time,
//     results, telemetry, captured output and failure reason are all written
//     or none is. A crash at any moment loses at most the trials that were
//     running; they stay pending (no end time) and PendingTrials finds them.
//   - A finished trial never changes again.
//   - Timestamps are stored and returned in UTC, truncated to microseconds.
//
// Several processes may work on one experiment at once (threads and
// processes on one machine with SQLite, several machines with PostgreSQL
// or MySQL): a driver queues trials, workers claim and run them. For that:
//   - Every bench process acts through Experiment.WithOwner(owner, lease)
//     with an owner string unique to the process. An owned trial is changed
//     (UpdateStatus, SetTrialRunner, Finish, FinishAndQueue) only by its
//     owner; the others get ErrNotOwner and change nothing. The plain
//     Experiment (no owner) checks nothing, as a single process needs.
//   - Claim hands each unfinished trial to at most one owner at a time: two
//     processes claiming at once never get the same trial. A trial is
//     claimable when it has no owner or its owner's lease ran out (lease
//     time on the database's clock) and nobody asked it to stop. An owner
//     keeps its trials by calling Heartbeat well within the lease, and hands
//     them back with Release when it stops cleanly. An owner whose lease ran
//     out keeps its trials until another owner claims them.
//   - Finish clears the owner: a finished trial belongs to nobody.
package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"time"
)

// Errors callers can test for with errors.Is.
var (
	// ErrNotFound: the experiment or trial does not exist.
	ErrNotFound = errors.New("not found")
	// ErrFinished: the trial already has a final status; finished trials
	// never change.
	ErrFinished = errors.New("trial already finished")
	// ErrUnsupportedDriver: Config.DriverName names a database bench cannot
	// use.
	ErrUnsupportedDriver = errors.New("unsupported storage driver")
	// ErrSchemaTooNew: the database was written by a newer bench whose
	// schema this one does not know.
	ErrSchemaTooNew = errors.New("database schema is newer than this bench")
	// ErrNoDatabase: Config.NoCreate was set and the database file does not
	// exist.
	ErrNoDatabase = errors.New("database does not exist")
	// ErrInvalid: the arguments of a call are invalid (empty ids, bad
	// directions, non-final status given to Finish, ...).
	ErrInvalid = errors.New("invalid storage request")
	// ErrNotOwner: an owner view (Experiment.WithOwner) tried to change a
	// trial that another owner, or nobody, holds.
	ErrNotOwner = errors.New("trial not owned by this process")
)

// Storage is an open database of experiments. It is safe for concurrent use
// by several goroutines, and several processes may open the same database.
type Storage interface {
	// Experiment creates the experiment info.ID, or resumes it when it
	// already exists (resumed is true). On resume the stored description,
	// objectives and git information are kept; a different git commit or
	// different objectives are logged as warnings, not errors.
	Experiment(ctx context.Context, info ExperimentInfo) (exp Experiment, resumed bool, err error)
	// LoadExperiment opens an existing experiment without changing it
	// (ErrNotFound when there is none).
	LoadExperiment(ctx context.Context, id string) (Experiment, error)
	// Experiments lists every experiment, ordered by id, with the number
	// of trials in each status.
	Experiments(ctx context.Context) ([]ExperimentSummary, error)
	// Migrate creates or upgrades the schema. Open does it unless
	// Config.LazySchemaCreate is set, in which case the first call that
	// needs the schema does. Migrating an up-to-date database changes
	// nothing.
	Migrate(ctx context.Context) error
	// Describe says where the data lives, for messages ("sqlite file
	// /abs/path/bench.sqlite", "postgresql bench@db.example:5432/bench").
	// It never contains a password.
	Describe() string
	// Close releases the database connections.
	Close() error
}

// Experiment is one experiment's trials. Its methods are safe for
// concurrent use (several trial runners write at once).
type Experiment interface {
	// Info returns the experiment as stored when it was opened.
	Info() ExperimentInfo
	// NewTrial queues a trial in status PENDING and returns it. Trial ids
	// continue from the largest id of the experiment plus one (the first
	// trial gets ExperimentInfo.FirstTrialID, default 1). The configuration
	// is stored once per ConfigHash across all experiments.
	NewTrial(ctx context.Context, spec TrialSpec) (Trial, error)
	// SetTrialRunner assigns an unfinished trial to a trial runner (1..N).
	SetTrialRunner(ctx context.Context, trialID, runnerID int) error
	// SetJob records the engine job an unfinished trial runs as (after
	// each submission). Through an owner's view only the owner may.
	SetJob(ctx context.Context, trialID int, job EngineJob) error
	// UpdateStatus records a non-final status (PENDING, READY, RUNNING) of
	// an unfinished trial at ts (zero: now) and adds it to the status
	// history. Moving to RUNNING sets the trial's start time to ts. A
	// finished trial gives ErrFinished and is not changed.
	UpdateStatus(ctx context.Context, trialID int, status trial.Status, ts time.Time) error
	// Finish records the final status of a trial with its results,
	// telemetry, captured output and failure reason in one transaction:
	// everything is written or nothing is. Finishing a finished trial gives
	// ErrFinished and changes nothing.
	Finish(ctx context.Context, trialID int, outcome TrialOutcome) error
	// FinishAndQueue finishes trialID like Finish and queues the next trial
	// like NewTrial, in one transaction: both are written or neither is.
	// A scheduler running trials one after another uses it so that each
	// trial costs a single commit.
	FinishAndQueue(ctx context.Context, trialID int, outcome TrialOutcome, next TrialSpec) (Trial, error)
	// PendingTrials returns the unfinished trials (no end time, status
	// PENDING, READY or RUNNING), by id, whatever their owner: the trials a
	// single process runs again on resume, and what to show. Processes that
	// share an experiment must take trials to run with Claim instead.
	PendingTrials(ctx context.Context) ([]Trial, error)
	// CompletedTrials returns the trials with id > afterTrialID whose final
	// status is SUCCEEDED, FAILED or TIMED_OUT (CANCELED is left out), by
	// id, with their parameters and results: what warm-starts an optimizer.
	CompletedTrials(ctx context.Context, afterTrialID int) ([]Trial, error)
	// Trials returns the trials the filter selects, by id, with their
	// parameters, metadata and results.
	Trials(ctx context.Context, filter TrialFilter) ([]Trial, error)
	// Changes is the change feed: the trials bench changed (queued,
	// claimed, started, finished, released, stop requested, job recorded;
	// not lease renewals) after change number since, by id, and the
	// number to pass next time. since 0 returns every trial. A reader that
	// polls with the returned number sees every change (each changed
	// trial as it is when read; one may come again, after a poll from 0),
	// and reads nothing when nothing changed. Numbers are the storage's
	// own: consecutive per experiment on SQLite, MySQL and MariaDB,
	// transaction ids on PostgreSQL, where a transaction left open on the
	// server delays the changes committed after it began until it ends.
	Changes(ctx context.Context, since int64) ([]Trial, int64, error)
	// AddProgress stores intermediate results of a trial (trial.Progress,
	// usually while it runs) as telemetry with their step; a zero Ts is
	// stored as now. A (ts, metric) already stored for the trial keeps its
	// value. Any process may add progress to any trial of the experiment
	// (no owner check), finished or not; an unknown trial gives
	// ErrNotFound. Progress is not a change of the change feed.
	AddProgress(ctx context.Context, trialID int, reports []trial.Progress) error
	// Trial returns one trial with its telemetry, captured output and
	// status history (ErrNotFound when there is none).
	Trial(ctx context.Context, trialID int) (TrialDetail, error)
	// SetStatus records the experiment's own status (RUNNING while a bench
	// process works on it, then SUCCEEDED, FAILED or CANCELED). A final
	// status also sets the experiment's end time; a non-final one clears it.
	SetStatus(ctx context.Context, status trial.Status, ts time.Time) error

	// WithOwner returns a view of the same experiment that acts for owner,
	// a string unique to the calling bench process ("host:pid:random"),
	// holding its trials for lease at a time. Through the view:
	//   - NewTrial and FinishAndQueue record the new trial as owned by
	//     owner, with a lease until now+lease;
	//   - UpdateStatus, SetTrialRunner, Finish and FinishAndQueue change a
	//     trial only when owner holds it; otherwise they change nothing and
	//     return an error wrapping ErrNotOwner that names the holder (a
	//     finished trial still gives ErrFinished, an unknown one ErrNotFound);
	//   - Claim, Heartbeat and Release work (on the plain experiment they
	//     return ErrInvalid).
	// An empty owner returns the plain experiment. A lease below one
	// millisecond makes every call that sets a lease return ErrInvalid.
	WithOwner(owner string, lease time.Duration) Experiment
	// Claim atomically takes up to limit (>= 1) unfinished trials, by id,
	// that have no owner or whose lease ran out, and that nobody asked to
	// stop: it makes them the view's owner's with a lease until now+lease
	// and returns them with their parameters and metadata, like
	// PendingTrials. Concurrent claims, from any process, never return the
	// same trial twice. A claimed trial keeps its status (RUNNING when its
	// previous owner died while running it): the new owner runs it again and
	// records its own statuses. None claimable: an empty slice, no error.
	Claim(ctx context.Context, limit int) ([]Trial, error)
	// Heartbeat extends to now+lease the lease of every unfinished trial the
	// owner holds in this experiment and returns how many there are. Trials another owner took
	// over are not touched (and not counted).
	Heartbeat(ctx context.Context) (int, error)
	// Release hands back the owner's unfinished trials of this experiment
	// (no owner, no lease): other processes may claim them at once.
	// Statuses are kept.
	Release(ctx context.Context) error

	// RequestStop asks a trial to stop (`bench stop EXPERIMENT TRIAL`), or
	// with trialID 0 the whole experiment (`bench stop EXPERIMENT`). Any
	// process may ask; the trial's owner (or the driver, for a trial nobody
	// holds) acts on it, usually by finishing the trial CANCELED. Asking
	// twice keeps the first request. A finished trial gives ErrFinished, an
	// unknown one ErrNotFound. A trial asked to stop is never claimed.
	RequestStop(ctx context.Context, trialID int) error
	// StopRequests reports whether the experiment was asked to stop, and
	// which unfinished trials were, by id.
	StopRequests(ctx context.Context) (experiment bool, trials []int, err error)
	// ClearStopRequest withdraws the experiment's stop request (a new run
	// of a stopped experiment); trials' requests are kept.
	ClearStopRequest(ctx context.Context) error

	// FindSucceeded returns the SUCCEEDED trial of this experiment with the
	// lowest id whose configuration hash is configHash and whose metadata
	// repeat_i is repeat ("" matches any repeat), with its results: a
	// result a new trial of the same configuration may reuse. ok is false
	// when there is none.
	FindSucceeded(ctx context.Context, configHash, repeat string) (tr Trial, ok bool, err error)
	// InFlight is FindSucceeded for the unfinished trials not asked to
	// stop: a trial of that configuration and repeat already queued or
	// running, whose result is coming.
	InFlight(ctx context.Context, configHash, repeat string) (tr Trial, ok bool, err error)
	// Counts counts the experiment's trials by status, whatever process
	// wrote them (statuses without trials are left out).
	Counts(ctx context.Context) (map[trial.Status]int, error)
	// RegisterWorker (owner view) records the owner as a bench worker of
	// the experiment with runners trial runners, alive for the view's
	// lease; calling it again renews it. UnregisterWorker removes it.
	RegisterWorker(ctx context.Context, runners int) error
	UnregisterWorker(ctx context.Context) error
	// WorkerRunners sums the trial runners of the experiment's live
	// workers (lease not expired), the view's own owner left out: how many
	// trials a driver keeps queued for them.
	WorkerRunners(ctx context.Context) (int, error)
}

// Objective is one optimization target of an experiment.
type Objective struct {
	Name      string  `json:"name"`
	Direction string  `json:"direction"` // "min" or "max"
	Weight    float64 `json:"weight,omitempty"`
}

// Targets returns the objectives as the shared trial.Objectives.
func Targets(objs []Objective) trial.Objectives {
	out := make(trial.Objectives, len(objs))
	for i, o := range objs {
		out[i] = trial.Objective{Name: o.Name, Max: o.Direction == "max"}
	}
	return out
}

// ExperimentInfo describes an experiment.
type ExperimentInfo struct {
	ID            string      `json:"id"`
	Description   string      `json:"description,omitempty"`
	RootEnvConfig string      `json:"root_env_config,omitempty"`
	GitRepo       string      `json:"git_repo,omitempty"`
	GitCommit     string      `json:"git_commit,omitempty"`
	Objectives    []Objective `json:"objectives"`
	// Notes are remarks recorded with the experiment about how its
	// results were obtained (e.g. that SSH host keys were not checked).
	// Experiment adds the given ones to those already stored (each kept
	// once, in the order first recorded).
	Notes []string `json:"notes,omitempty"`

	// Filled in by the storage.
	Status     trial.Status `json:"status"`
	TsStart    time.Time    `json:"ts_start"`
	TsEnd      time.Time    `json:"ts_end,omitzero"`       // zero while not finished
	DriverName string       `json:"driver_name,omitempty"` // host of the last bench process that opened it for writing
	DriverPID  int          `json:"driver_pid,omitempty"`

	// FirstTrialID is the id of the first trial of an experiment that has
	// none yet (mlos_bench's trial_id global). Values below 1 mean 1. It is
	// not stored.
	FirstTrialID int `json:"-"`
}

// ExperimentSummary is an experiment with its trial counts.
type ExperimentSummary struct {
	ExperimentInfo
	// Trials counts the experiment's trials by status.
	Trials map[trial.Status]int `json:"trials"`
}

// TrialSpec is what NewTrial stores.
type TrialSpec struct {
	// ConfigHash identifies the configuration (tunables' canonical hash);
	// empty means HashParams(Params). A hash stored earlier with other
	// parameters is an error.
	ConfigHash string
	// Params are the tunable values as text.
	Params map[string]string
	// Metadata are the trial parameters (mlos_bench's trial_param):
	// optimizer, repeat_i, is_defaults, opt_target_<i>, opt_direction_<i>...
	Metadata map[string]string
	// TrialRunnerID is the trial runner (1..N); 0 leaves it unassigned.
	TrialRunnerID int
	// TsStart is when the trial is queued; zero means now.
	TsStart time.Time
	// Running records the trial as started right away (status RUNNING after
	// PENDING in its history), saving the separate UpdateStatus call of a
	// trial that runs as soon as it is queued.
	Running bool
	// RetryOf is the id of the trial of the same experiment that this one
	// retries (0: none). A retry of a retry is stored as a retry of the
	// original trial, so that RetryOf always names the first of the chain.
	// An unknown trial is ErrInvalid.
	RetryOf int
	// ReusedFrom is the trial whose result this trial reuses (nil: none);
	// an empty ExperimentID means this experiment. An unknown trial is
	// ErrInvalid.
	ReusedFrom *TrialRef
	// Claim stores the trial only if no other trial of the experiment with
	// the same configuration hash and trial parameter repeat_i is in
	// flight (unfinished, not asked to stop) or SUCCEEDED, checked in the
	// same transaction as the insert, under the experiment's lock: two
	// processes never both run one configuration and repeat. Otherwise
	// NewTrial returns a *ClaimedError (errors.Is ErrClaimed) naming that
	// trial, and stores nothing.
	Claim bool
	// MaxConfigs is the experiment's budget of configurations, the
	// optimizer's max_suggestions (0: none). When it is set and the
	// experiment holds no trial of this configuration yet, the trial is
	// stored only while the experiment holds fewer than MaxConfigs
	// distinct configurations (trials of any status, retries and reused
	// trials included, counted by their config_id), checked in the same
	// transaction as the insert, under the experiment's lock: several
	// processes together never store more. Otherwise NewTrial returns
	// ErrBudgetSpent and stores nothing. A trial of a configuration the
	// experiment holds (a repeat, a retry, a reused result) is never
	// refused.
	MaxConfigs int
}

// ErrBudgetSpent: a TrialSpec with MaxConfigs would add a configuration
// to an experiment that holds that many already. The optimizer's budget
// (max_suggestions) is spent, over every process of the experiment.
var ErrBudgetSpent = errors.New("the experiment's budget of configurations (max_suggestions) is spent")

// ErrClaimed: a TrialSpec with Claim found an identical trial in flight
// or succeeded (ClaimedError names it).
var ErrClaimed = errors.New("an identical trial (same configuration and repeat) is in flight or succeeded")

// ClaimedError is NewTrial's error for a Claim that another trial holds.
type ClaimedError struct {
	// Trial is the identical trial: wait for it (unfinished) or reuse its
	// result (SUCCEEDED).
	Trial Trial
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%v: trial %d (%s)", ErrClaimed, e.Trial.ID, e.Trial.Status)
}

func (e *ClaimedError) Unwrap() error { return ErrClaimed }

// TrialRef names a trial of any experiment.
type TrialRef struct {
	ExperimentID string `json:"experiment_id"`
	TrialID      int    `json:"trial_id"`
}

// Trial is a stored trial.
type Trial struct {
	ExperimentID  string            `json:"experiment_id"`
	ID            int               `json:"trial_id"`
	ConfigID      int64             `json:"config_id"`
	ConfigHash    string            `json:"config_hash"`
	TrialRunnerID int               `json:"trial_runner_id,omitempty"` // 0: unassigned
	Status        trial.Status      `json:"status"`
	TsStart       time.Time         `json:"ts_start"`
	TsEnd         time.Time         `json:"ts_end,omitzero"` // zero while not finished
	Params        map[string]string `json:"params"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// Results are set once the trial is finished (nil before).
	Results       Metrics `json:"results,omitempty"`
	FailureReason string  `json:"failure_reason,omitempty"`
	// Owner is the bench process holding this unfinished trial ("": none)
	// and LeaseUntil when its claim runs out (database clock; zero: no
	// lease). Finishing a trial clears both.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// RetryOf is the original trial this one retries (0: none).
	RetryOf int `json:"retry_of,omitempty"`
	// ReusedFrom is the trial whose result this one reused (nil: none).
	ReusedFrom *TrialRef `json:"reused_from,omitempty"`
	// StopRequested tells that RequestStop asked this trial to stop.
	StopRequested bool `json:"stop_requested,omitempty"`
	// Job is the trial's job on an execution engine (nil: it ran in a
	// bench process).
	Job *EngineJob `json:"engine_job,omitempty"`
}

// EngineJob is a trial's job on an execution engine (Slurm, AWS Batch, an
// SSH host pool): enough to poll it again after a restart and to submit
// it again after a hang. It is trial.Handle, the type runners attach.
type EngineJob = trial.Handle

// Finished reports whether the trial has its final status.
func (t Trial) Finished() bool { return !t.TsEnd.IsZero() }

// TrialDetail is a trial with everything recorded about it.
type TrialDetail struct {
	Trial
	Telemetry []Telemetry    `json:"telemetry"`
	Output    []Output       `json:"output"`
	History   []StatusChange `json:"history"`
}

// TrialFilter selects trials. The zero value selects all of them.
type TrialFilter struct {
	// Statuses keeps only trials in one of these statuses (nil: all).
	Statuses []trial.Status
	// AfterID keeps only trials with a larger id.
	AfterID int
	// Limit caps the number of trials returned (0: no cap).
	Limit int
}

// TrialOutcome is what Finish records (see trial.Outcome).
type TrialOutcome = trial.Outcome

// Telemetry is one time-stamped metric value (see trial.Telemetry).
type Telemetry = trial.Telemetry

// Output is the captured output of one command of a trial (see
// trial.Output).
type Output = trial.Output

// StatusChange is one entry of a trial's status history.
type StatusChange struct {
	Ts     time.Time    `json:"ts"`
	Status trial.Status `json:"status"`
}

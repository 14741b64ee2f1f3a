// Package schedulers runs the optimization loop (mlos_bench's Scheduler and
// TrialRunner): a dispatcher asks the optimizer for configurations, queues
// them as trials in storage, hands them to runners, stores each outcome,
// feeds the results back, and resumes an interrupted experiment where it
// stopped.
//
// One goroutine, the dispatcher, owns the optimizer and the queue. Each
// running trial has a goroutine of its own that runs it on a Runner and
// stores its outcome; the dispatcher then observes the outcome. Several
// bench processes can work on one experiment: every trial a process runs is
// owned by it in storage under a lease that its heartbeat renews, so a live
// process's trials are never run twice, and a crashed process's trials are
// claimed again once their lease has expired.
package schedulers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/internal/clock"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// Observer is told about the progress of an experiment (for progress bars
// and logs). Methods are called from the dispatcher's goroutine.
type Observer interface {
	TrialStarted(t storage.Trial)
	// TrialFinished is called once the trial's outcome is stored. best is
	// the experiment's best trial so far (across every process and earlier
	// run), nil while no trial succeeded.
	TrialFinished(t storage.Trial, outcome trial.Outcome, best *Best)
}

// ResumeObserver is an Observer that is also told, before the first trial
// runs, how many of the experiment's budgeted trials had finished before
// this Start (earlier runs, other processes): progress then counts the
// trials left.
type ResumeObserver interface {
	Resumed(finished int)
}

// PlanObserver is an Observer that is also told when the plan grows
// during the run: a confirmation or refinement phase queues trials beyond
// the search budget, and planned is the new total (progress then counts
// them, instead of done running past planned).
type PlanObserver interface {
	PlanChanged(planned int)
}

// growPlan adds n trials to the planned count and tells the observer. An
// unknown plan (0: a multi-fidelity run, a worker) stays unknown.
func (s *Scheduler) growPlan(n int) {
	if s.stats.Planned <= 0 || n <= 0 {
		return
	}
	s.stats.Planned += n
	if po, ok := s.o.Observer.(PlanObserver); ok {
		po.PlanChanged(s.stats.Planned)
	}
}

// Best is the experiment's best trial: its id and target values (in the
// metrics' own signs, in target order).
type Best struct {
	TrialID int
	Values  []float64
}

// Stats summarizes what a Start call did.
type Stats struct {
	// Planned is the number of trials the budget allows (0: unknown).
	Planned   int
	Run       int // trials run by this process
	Succeeded int
	Failed    int // FAILED or TIMED_OUT for good (after retries)
	Retried   int // failed attempts that were retried
	Canceled  int // stopped on request (bench stop)
	Reused    int // results reused from an identical trial
	Resumed   int // trials that were already finished before this process
	// Remaining counts trials left pending (interrupted runs).
	Remaining int
	// EndReason says why the run ended (a stopping rule, the budget, bench
	// stop, ...); it is stored as a note of the experiment.
	EndReason string
	// StoppedByRule is set when a stopping rule (max_time, max_cost,
	// converged) ended the search before the optimizer's budget: the
	// end-of-run check then expects no more trials than were run.
	StoppedByRule bool
	// Confirmation is the verdict of the confirmation phase ("": none).
	Confirmation string
	// NoiseBest says how a noise-aware run picked its best ("": not
	// noise-aware), with the learned noise level.
	NoiseBest string
}

// ErrStopped is wrapped when the experiment stopped before its budget was
// spent: a failure budget, fail-fast, or bench stop.
var ErrStopped = errors.New("experiment stopped")

// Options are the optional parts of a scheduler.
type Options struct {
	Observer Observer
	Logger   *slog.Logger
	// TeardownTimeout bounds the final teardown (default 10 minutes).
	TeardownTimeout time.Duration
	// Globals are the experiment's globals, given to every trial.
	Globals map[string]any
	// Devices bounds concurrency by device slots and gives each trial one
	// (nil: no device limits).
	Devices *devices.Pool
	// Owner names this process in storage (default host:pid:random).
	Owner string
	// Worker only claims and runs trials queued by another process: it
	// never suggests, and returns once the experiment is over.
	Worker bool
	// ExperimentStatus reads the experiment's stored status (a worker
	// stops when its driver has finished the experiment).
	ExperimentStatus func(ctx context.Context) (trial.Status, error)
	// Tunables are the experiment's tunables (what stored configurations
	// are assigned to for the optimizer).
	Tunables *tunables.Groups
	// ReuseFrom is the experiment whose results may be reused
	// (Config.ReuseFrom, opened by the caller).
	ReuseFrom storage.Experiment
	// Tick is how often the dispatcher renews its lease, looks for stop
	// requests and hung trials and polls other processes' trials
	// (default 200ms).
	Tick time.Duration
	// Clock is the time source of the dispatcher's tick, the lease
	// renewals (heartbeat), hang detection (trial_idle_timeout) and the
	// max_time stopping rule; nil is the real clock. Tests pass a
	// clock.Fake, with storage on the same clock (storage.Config.Clock),
	// to move time by hand.
	Clock Clock
	// onBeat is called after each lease renewal (tests).
	onBeat func()
	// onTick is called after each tick the dispatcher handled (tests).
	onTick func()

	// PastProgress reads the stored progress of a trial (early stopping
	// rebuilds its pruner from the finished trials' progress on resume;
	// prune.go). nil: the pruner starts empty.
	PastProgress func(ctx context.Context, trialID int) ([]trial.Progress, error)
}

// Clock is the scheduler's time source (clock.Clock; clock.Real by
// default).
type Clock = clock.Clock

// clock returns the scheduler's clock.
func (s *Scheduler) clock() Clock { return clock.Or(s.o.Clock) }

// Scheduler runs an experiment's trials on its runners.
type Scheduler struct {
	cfg     Config
	runners []Runner
	opt     optimizers.Optimizer
	targets trial.Objectives
	exp     storage.Experiment // this process's owner view
	plain   storage.Experiment // the experiment as opened (unowned trials)
	o       Options
	log     *slog.Logger
	stats   Stats
	// remote holds the network workers' runners (UseRemote; nil: none);
	// remoteN counts those the dispatcher has in service.
	remote  RemotePool
	remoteN atomic.Int64
	pruning *pruning // early stopping (prune.go); nil: none
	// fid is multi-fidelity scheduling (fidelity.go); nil: none.
	fid *fidelityRun
}

// New returns a scheduler. exp is the experiment as opened from storage;
// the scheduler acts on it as its owner.
func New(cfg Config, runners []Runner, opt optimizers.Optimizer, exp storage.Experiment, o Options) (*Scheduler, error) {
	if len(runners) == 0 {
		return nil, errors.New("scheduler: no trial runners")
	}
	if cfg.TrialConfigRepeatCount < 1 {
		cfg.TrialConfigRepeatCount = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TeardownTimeout <= 0 {
		o.TeardownTimeout = 10 * time.Minute
	}
	if o.Tick <= 0 {
		o.Tick = 200 * time.Millisecond
	}
	if o.Owner == "" {
		o.Owner = NewOwner()
	}
	s := &Scheduler{cfg: cfg, runners: runners, opt: opt, targets: trial.Objectives(opt.Targets()),
		exp: exp.WithOwner(o.Owner, cfg.Lease), plain: exp, o: o, log: o.Logger}
	if o.Tunables == nil {
		return nil, errors.New("scheduler: no tunables")
	}
	// A copy of its own: the caller's may be an environment's, which its
	// trial runner assigns each trial's values to on the runner's
	// goroutine while this one copies them (runnerTunables, to observe
	// another process's result, say): a data race under -race.
	s.o.Tunables = o.Tunables.Copy()
	s.stats.Planned = s.planned()
	s.applyNoise()
	if err := s.setupFidelity(); err != nil { // fidelity.go
		return nil, err
	}
	return s, nil
}

// NewOwner returns a name for this process as the owner of trials:
// host:pid:random.
func NewOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// OwnerDead reports whether owner (a trial's Owner) names a process of
// this host that no longer exists (a different host: false); see
// trial.OwnerDead.
func OwnerDead(owner string) bool { return trial.OwnerDead(owner) }

// Stats returns what the scheduler did so far.
func (s *Scheduler) Stats() Stats { return s.stats }

// Optimizer returns the scheduler's optimizer.
func (s *Scheduler) Optimizer() optimizers.Optimizer { return s.opt }

func (s *Scheduler) planned() int {
	if s.o.Worker || s.cfg.Fidelity.On() {
		return 0 // a multi-fidelity run's trials are not known ahead
	}
	n := s.opt.MaxSuggestions() * s.cfg.TrialConfigRepeatCount
	if s.cfg.MaxTrials > 0 && (n <= 0 || s.cfg.MaxTrials < n) {
		n = s.cfg.MaxTrials
	}
	return n
}

// notePlanned records the run's budget with the experiment
// (storage.PlannedPrefix) for readers such as bench ui.
func (s *Scheduler) notePlanned(ctx context.Context) {
	na, ok := s.exp.(storage.NoteAdder)
	if n := s.planned(); !ok || n <= 0 {
		return
	} else if err := na.AddNotes(ctx, fmt.Sprintf("%s%d trials", storage.PlannedPrefix, n)); err != nil {
		s.log.Warn("recording the experiment's budget", "err", err)
	}
}

// concurrency is how many trials run at once: one for mlos_bench's
// SyncScheduler, else every runner, bounded by the device slots.
func (s *Scheduler) concurrency() int {
	n := len(s.runners)
	if s.localOff() {
		n = 0
	}
	if !s.cfg.Parallel {
		n = min(n, 1)
	}
	if s.o.Devices != nil && s.o.Devices.Size() > 0 {
		n = min(n, s.o.Devices.Size())
	}
	// The network workers' slots (remote.go) take no device slot here,
	// and run at once with the SyncScheduler too (as bench worker
	// processes do).
	return n + int(s.remoteN.Load())
}

// Start runs the experiment until the optimizer has converged or the
// budget (max_suggestions, max_trials) is spent, then tears the
// environments down (when teardown is on). The budget counts the
// experiment's trials from earlier runs and other processes too; on resume,
// unfinished trials run first and finished ones warm-start the optimizer.
//
// When ctx is cancelled, the running trials are stopped (their processes
// killed) and left unfinished in storage, handed back to run again on
// resume; teardown still runs, and Start returns ctx.Err().
func (s *Scheduler) Start(ctx context.Context) error {
	d, err := s.newDispatch(ctx)
	if err != nil {
		return err
	}
	s.notePlanned(ctx)
	runErr := d.loop(ctx)
	runErr = d.confirmPhase(ctx, runErr)
	final := context.WithoutCancel(ctx)
	if s.o.Worker {
		if err := s.exp.UnregisterWorker(final); err != nil {
			s.log.Warn("leaving the experiment's workers", "err", err)
		}
	}
	if err := s.exp.Release(final); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("handing back unstarted trials: %w", err))
	}
	if pending, err := s.exp.PendingTrials(final); err == nil {
		s.stats.Remaining = len(pending)
	}
	if !s.o.Worker {
		st := trial.SUCCEEDED
		switch {
		case ctx.Err() != nil, errors.Is(runErr, errStopExperiment):
			st = trial.CANCELED
		case runErr != nil:
			st = trial.FAILED
		}
		if err := s.exp.SetStatus(final, st, time.Time{}); err != nil {
			s.log.Warn("storing the experiment's status", "err", err)
		}
		s.stats.StoppedByRule = d.stopFired()
		s.recordEnd(final, d.endReason(runErr, ctx.Err() != nil))
	}
	tdErr := s.teardown(ctx)
	return errors.Join(runErr, tdErr)
}

// teardown tears every runner's environment down when configured to, even
// after a cancellation (with its own time limit).
func (s *Scheduler) teardown(ctx context.Context) error {
	if !s.cfg.Teardown {
		return nil
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.TeardownTimeout)
	defer cancel()
	var errs []error
	for _, r := range s.runners {
		if err := r.Teardown(tctx); err != nil {
			errs = append(errs, fmt.Errorf("teardown of trial runner %d: %w", r.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// runnerTunables returns a copy of the tunables a stored configuration is
// assigned to for the optimizer.
func (s *Scheduler) runnerTunables() *tunables.Groups { return s.o.Tunables.Copy() }

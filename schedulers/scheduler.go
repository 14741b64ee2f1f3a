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
	"maps"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
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
	// onBeat is called after each lease renewal (tests).
	onBeat func()
}

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
	s.stats.Planned = s.planned()
	s.applyNoise()
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
	if s.o.Worker {
		return 0
	}
	n := s.opt.MaxSuggestions() * s.cfg.TrialConfigRepeatCount
	if s.cfg.MaxTrials > 0 && (n <= 0 || s.cfg.MaxTrials < n) {
		n = s.cfg.MaxTrials
	}
	return n
}

// concurrency is how many trials run at once: one for mlos_bench's
// SyncScheduler, else every runner, bounded by the device slots.
func (s *Scheduler) concurrency() int {
	if s.cfg.DriverOnly && !s.o.Worker {
		return 0
	}
	n := len(s.runners)
	if !s.cfg.Parallel {
		n = 1
	}
	if s.o.Devices != nil && s.o.Devices.Size() > 0 {
		n = min(n, s.o.Devices.Size())
	}
	return n
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

// item is a trial this process owns and has not started yet. A trial
// this process will start itself is stored only when it starts (spec set,
// t unset), so that it costs one write.
type item struct {
	spec    *storage.TrialSpec
	t       storage.Trial
	sugID   int // the optimizer's suggestion id (0: not suggested here)
	root    int // the first attempt's trial id
	attempt int // 0 for the first attempt
	avoid   int // runner id a retry should avoid (0: none)
	// foreign marks a trial another process ran (not in this process's
	// Stats).
	foreign bool
}

// job is a running trial.
type job struct {
	item
	runner Runner
	slot   *devices.Slot
	cancel context.CancelCauseFunc
	act    *services.Activity
	// attached is set once the trial's engine job is recorded (the far
	// side may then store the outcome itself).
	attached atomic.Bool
}

// done is what a trial's goroutine reports.
type done struct {
	j           *job
	out         trial.Outcome
	interrupted bool  // ctx was cancelled: nothing stored
	unfinished  bool  // the run ended with a status that is not final (stored as is)
	storeErr    error // storing the outcome failed
}

// dispatch is the state of one Start call, owned by the dispatcher's
// goroutine.
type dispatch struct {
	s       *Scheduler
	canary  bool // the first trial runs alone (canary.go)
	queue   []item
	running map[int]*job
	idle    []Runner
	next    int // round-robin position (SyncScheduler)
	results chan done
	// aheadLeft counts the trials this process queued ahead (stored
	// unowned) that it has not seen claimed yet.
	aheadLeft int
	// suggestions counts the configurations the optimizer suggested in
	// this process (mlos_bench's optimizer iteration).
	suggestions int
	// observed holds the trials whose outcome the optimizer has seen.
	observed map[int]bool
	// waiting maps an unfinished trial to the trials of the same
	// configuration and repeat that wait for its result (dedup).
	waiting map[int][]item
	// trialCount counts the experiment's trials, retries left out: the
	// max_trials budget.
	trialCount int
	failed     int // trials of the experiment that failed for good
	succeeded  int // trials of the experiment that succeeded
	// firstFailures holds the failure signatures of the first trials of
	// an experiment without successes (fail-fast).
	firstFailures []string
	firstReason   string
	best          *Best
	// others reports trials owned by other processes: the dispatcher then
	// polls storage for their outcomes.
	others     bool
	lastStop   time.Time
	lastClaim  time.Time
	lastCount  time.Time // countTrials' last scan
	lastPoll   time.Time // pollOthers' last scan
	stopErr    error
	noMore     bool // the optimizer has nothing more to suggest
	retryCount map[int]int
	// noReuse queues the next suggestion to run even when an identical
	// trial exists (config_id re-runs).
	noReuse bool
	// keys holds "config hash|repeat" of every trial of the experiment this
	// process knows of (dedup asks storage only about these).
	keys map[string]bool
	// beat renews the leases (nil outside loop).
	beat *heartbeat
	// feedSeq is the storage change feed's number this process has read
	// up to (pollOthers reads the trials changed since).
	feedSeq int64
	// stop applies the stopping rules (noise.go); stopApplied is set once
	// the queue was cut when one fired.
	stop        *stopper
	stopApplied bool
	searchEnd   string // why the search ended, before a confirmation
	racing      *racer // adaptive or spread repeats (racing.go)
}

func (s *Scheduler) newDispatch(ctx context.Context) (*dispatch, error) {
	d := &dispatch{s: s, running: map[int]*job{}, results: make(chan done, len(s.runners)),
		observed: map[int]bool{}, waiting: map[int][]item{}, retryCount: map[int]int{}, keys: map[string]bool{},
		stop: newStopper(s.cfg.Noise, nil)}
	d.idle = append(d.idle, s.runners...)
	all, seq, err := s.exp.Changes(ctx, 0)
	if err != nil {
		return nil, err
	}
	d.feedSeq = seq
	suggestions := 0
	last := lastAttempts(all)
	var priors []optimizers.Prior
	var unobserved []map[string]any // earlier suggestions without a result to observe
	for _, t := range all {
		d.keys[t.ConfigHash+"|"+t.Metadata["repeat_i"]] = true
		if t.RetryOf == 0 {
			d.trialCount++
			if r := t.Metadata["repeat_i"]; r == "" || r == "1" {
				suggestions++
			}
		} else {
			d.retryCount[t.RetryOf]++
		}
		if !t.Finished() {
			unobserved = append(unobserved, stringValues(t.Params))
			continue
		}
		s.stats.Resumed++
		d.observed[t.ID] = true
		d.observeStored(t)
		switch t.Status {
		case trial.SUCCEEDED:
			d.succeeded++
		case trial.FAILED, trial.TIMED_OUT:
			if !retriedLater(last, t) {
				d.failed++
			}
		}
		if t.Status != trial.CANCELED {
			priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results)})
		} else {
			unobserved = append(unobserved, stringValues(t.Params))
		}
	}
	if !s.o.Worker {
		s.warnTunablesChanged(all)
	}
	if ro, ok := s.o.Observer.(ResumeObserver); ok {
		finished := 0
		for _, t := range all {
			if t.RetryOf == 0 && t.Finished() {
				finished++
			}
		}
		ro.Resumed(finished)
	}
	if best, scores, ok := storage.Best(all, s.targets); ok {
		d.best = &Best{TrialID: best.ID, Values: s.targets.Values(scores)}
	}
	if !s.o.Worker {
		if suggestions > 0 {
			s.opt.Skip(suggestions)
		}
		// Optimizers that replay fixed configurations (SupportsPreload
		// false) only take the best from earlier trials.
		if len(priors) > 0 {
			if err := s.opt.BulkRegister(priors); err != nil {
				return nil, fmt.Errorf("optimizer %s: warm start from the experiment's %d earlier trials: %w", s.opt.Name(), len(priors), err)
			}
		}
		// A re-seeded optimizer must not suggest again what earlier runs
		// suggested and did not finish (resume.go).
		if err := registerPending(s.opt, unobserved); err != nil {
			return nil, fmt.Errorf("optimizer %s: the experiment's %d unfinished trials: %w", s.opt.Name(), len(unobserved), err)
		}
		if err := s.exp.SetStatus(ctx, trial.RUNNING, time.Time{}); err != nil {
			return nil, err
		}
		// A bench stop of an earlier run does not stop this one.
		if err := s.exp.ClearStopRequest(ctx); err != nil {
			return nil, err
		}
	}
	if s.o.Worker {
		// The driver keeps as many trials queued as the workers have runners.
		if err := s.exp.RegisterWorker(ctx, s.concurrency()); err != nil {
			return nil, err
		}
	}
	// Trials of processes of this host that died can be taken over now.
	for _, t := range all {
		if trial.TakeOver(t.Owner, s.o.Owner, t.Finished()) {
			if err := s.plain.WithOwner(t.Owner, s.cfg.Lease).Release(ctx); err != nil {
				return nil, err
			}
		}
	}
	if s.cfg.ConfigID > 0 && !s.o.Worker {
		if err := d.requeueConfig(ctx, all, s.cfg.ConfigID); err != nil {
			return nil, err
		}
	}
	d.canary = s.cfg.Canary && len(all) == 0 && !s.o.Worker && s.concurrency() > 1 && s.cfg.Runner != RunnerPassive
	return d, nil
}

// warnTunablesChanged says, on resume, when the experiment's earlier
// trials were run with other tunables than the configs define now (names
// added or removed, values that no longer fit): what happens to them, and
// how to start afresh.
func (s *Scheduler) warnTunablesChanged(all []storage.Trial) {
	if len(all) == 0 || s.o.Tunables == nil {
		return
	}
	now := map[string]bool{}
	for _, t := range s.o.Tunables.Tunables() {
		now[t.Name()] = true
	}
	stored := map[string]bool{}
	misfits := 0
	for _, t := range all {
		for k := range t.Params {
			stored[k] = true
		}
		if err := s.o.Tunables.Copy().Assign(stringValues(t.Params)); err != nil {
			misfits++
		}
	}
	var added, removed []string
	for k := range now {
		if !stored[k] {
			added = append(added, k)
		}
	}
	for k := range stored {
		if !now[k] {
			removed = append(removed, k)
		}
	}
	if misfits > 0 || len(removed) > 0 || len(added) == 0 {
		// Nothing changed, or the optimizer's warm start refuses the
		// trials that no longer fit, with the reason.
		return
	}
	sort.Strings(added)
	s.log.Warn("resuming an experiment whose tunables changed: its earlier trials have no value for the new tunables, and they warm-start the optimizer as if those had their defaults; use a new --experiment_id for a clean start",
		"experiment", s.cfg.ExperimentID, "new_tunables", strings.Join(added, ","), "earlier_trials", len(all))
}

// lastAttempts maps each trial's first attempt to the id of its last
// attempt (retries are stored with retry_of naming the first attempt).
func lastAttempts(all []storage.Trial) map[int]int {
	last := make(map[int]int, len(all))
	for _, t := range all {
		root := t.ID
		if t.RetryOf != 0 {
			root = t.RetryOf
		}
		last[root] = max(last[root], t.ID)
	}
	return last
}

// retriedLater reports whether a trial has a later attempt.
func retriedLater(last map[int]int, t storage.Trial) bool {
	root := t.ID
	if t.RetryOf != 0 {
		root = t.RetryOf
	}
	return last[root] > t.ID
}

func stringValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// loop runs until there is nothing left to run (or ctx ends).
func (d *dispatch) loop(ctx context.Context) error {
	s := d.s
	tick := time.NewTicker(s.o.Tick)
	defer tick.Stop()
	// Leases are renewed off this goroutine: Suggest may take longer
	// than a lease.
	d.beat = s.startHeartbeat(ctx)
	defer d.beat.stop()
	for {
		d.beat.busy.Store(len(d.running) > 0 || len(d.queue) > 0)
		if ctx.Err() == nil && d.stopErr == nil {
			if err := d.fill(ctx); err != nil {
				d.stopErr = err
			}
		}
		if len(d.running) == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.stopErr != nil {
				return d.stopErr
			}
			more, err := d.more(ctx)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
		}
		select {
		case r := <-d.results:
			if err := d.finished(ctx, r); err != nil && d.stopErr == nil {
				d.stopErr = err
			}
		case <-tick.C:
			if err := d.tick(ctx); err != nil && d.stopErr == nil {
				d.stopErr = err
			}
		case <-ctx.Done():
			// The trials' contexts derive from ctx: they are being stopped;
			// wait for their goroutines.
			for len(d.running) > 0 {
				_ = d.finished(ctx, <-d.results)
			}
			return ctx.Err()
		}
	}
}

// more reports, with nothing running here, whether the experiment may
// still have work: trials of other processes to wait for, or (for a
// worker) a driver that is still going.
func (d *dispatch) more(ctx context.Context) (bool, error) {
	s := d.s
	if len(d.queue) > 0 || len(d.waiting) > 0 || d.deferredLeft() {
		return true, nil
	}
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return false, err
	}
	if s.o.Worker {
		if len(pending) > 0 {
			return true, nil
		}
		if s.o.ExperimentStatus == nil {
			return false, nil
		}
		st, err := s.o.ExperimentStatus(ctx)
		if err != nil {
			return false, err
		}
		return st == trial.RUNNING || st == trial.PENDING, nil
	}
	for _, t := range pending {
		if t.Owner != s.o.Owner {
			d.others = true
			return true, nil
		}
	}
	if s.cfg.DriverOnly && d.notDone() && d.stopErr == nil {
		// Only workers run trials: wait for them to come.
		d.others = true
		return true, nil
	}
	return false, nil
}

// fill starts trials on idle runners: queued ones first (retries, claimed,
// repeats), then trials claimed from storage, then new suggestions.
func (d *dispatch) fill(ctx context.Context) error {
	d.applyStop()
	for len(d.running) < d.limit() && len(d.idle) > 0 {
		if len(d.queue) == 0 {
			progressed, err := d.refill(ctx)
			if err != nil || !progressed {
				return err
			}
			continue // suggestions may all have reused results
		}
		i := d.nextItem()
		if i < 0 {
			// Only the runner a retry should avoid is idle: run something
			// else on it, or wait for another runner.
			progressed, err := d.refill(ctx)
			if err != nil || !progressed {
				return err
			}
			continue
		}
		it := d.queue[i]
		d.queue = append(d.queue[:i], d.queue[i+1:]...)
		if err := d.start(ctx, it); err != nil {
			return err
		}
	}
	return nil
}

// nextItem picks the queued item to start: the first one, unless it is a
// retry whose failed runner is the only idle one while others are busy;
// then the first item that can run there (-1: none).
func (d *dispatch) nextItem() int {
	if !d.s.cfg.Parallel || len(d.running) == 0 {
		return 0
	}
	for i, it := range d.queue {
		if it.avoid == 0 {
			return i
		}
		for _, r := range d.idle {
			if r.ID() != it.avoid {
				return i
			}
		}
	}
	return -1
}

// refill adds trials to the queue: claimed from storage, else suggested.
// It reports whether it got anything (suggestions whose results were
// reused count).
func (d *dispatch) refill(ctx context.Context) (bool, error) {
	s := d.s
	want := min(len(d.idle), d.limit()-len(d.running))
	if want <= 0 {
		return false, nil
	}
	// Claiming is a write: at most once a tick, unless this process only
	// claims (a worker) or queued trials ahead itself, which run before
	// new suggestions (in the order of their ids).
	var claimed []storage.Trial
	if now := time.Now(); s.o.Worker || d.aheadLeft > 0 || now.Sub(d.lastClaim) >= s.o.Tick {
		d.lastClaim = now
		var err error
		if claimed, err = s.exp.Claim(ctx, want); err != nil {
			return false, err
		}
		if len(claimed) < want {
			d.aheadLeft = 0 // all claimed, by this process or others
		} else {
			d.aheadLeft = max(0, d.aheadLeft-len(claimed))
		}
	}
	for _, t := range claimed {
		d.queue = append(d.queue, d.itemFor(t))
	}
	if len(claimed) > 0 || s.o.Worker {
		return len(claimed) > 0, nil
	}
	if d.popDeferred() {
		return true, nil
	}
	return d.suggest(ctx, want)
}

// itemFor makes a queue item of a claimed trial.
func (d *dispatch) itemFor(t storage.Trial) item {
	it := item{t: t, root: t.ID}
	if t.RetryOf != 0 {
		it.root = t.RetryOf
		it.attempt = d.retryCount[t.RetryOf]
	}
	return it
}

// notDone reports whether the budget allows more suggestions.
func (d *dispatch) notDone() bool {
	s := d.s
	return !d.noMore && s.opt.NotConverged() && (s.cfg.MaxTrials <= 0 || d.trialCount < s.cfg.MaxTrials) && !d.stopFired()
}

// suggest asks the optimizer for configurations for want idle runners and
// queues them (trial_config_repeat_count trials each).
func (d *dispatch) suggest(ctx context.Context, want int) (bool, error) {
	s := d.s
	if !d.notDone() {
		return false, nil
	}
	if d.others {
		// Other processes may have added trials: count from storage.
		if n, err := d.countTrials(ctx); err == nil {
			d.trialCount = n
		}
		if !d.notDone() {
			return false, nil
		}
	}
	k := trial.Budget{Repeats: d.repeats(), MaxTrials: s.cfg.MaxTrials}.Suggestions(want, s.cfg.QueueAhead, d.trialCount)
	if k < 1 {
		return false, nil
	}
	sugs, err := s.opt.Suggest(ctx, k)
	if err != nil {
		return false, fmt.Errorf("optimizer %s: %w", s.opt.Name(), err)
	}
	d.suggestions += len(sugs)
	if len(sugs) == 0 {
		d.noMore = true
		return false, nil
	}
	// This process's runners take the first want trials; the rest are
	// queued ahead for others. When some are, this process's own trials
	// are stored at once too, so that trial ids follow the order of the
	// suggestions and their repeats (as in mlos_bench, where repeat 1 of a
	// configuration is the trial before repeat 2).
	local := want
	storeNow := len(sugs)*d.repeats() > want
	for _, sg := range sugs {
		n := min(local, d.repeats())
		if err := d.queueSuggestion(ctx, sg, n, storeNow); err != nil {
			return false, err
		}
		local -= n
	}
	return true, nil
}

func (d *dispatch) countTrials(ctx context.Context) (int, error) {
	// Reading every trial is a scan: at most once a second.
	now := time.Now()
	if now.Sub(d.lastCount) < time.Second {
		return d.trialCount, nil
	}
	d.lastCount = now
	all, err := d.s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range all {
		if t.RetryOf == 0 {
			n++
		}
	}
	return n, nil
}

// metadata returns the trial parameters every trial of a suggestion has.
func (d *dispatch) metadata(tun *tunables.Groups) map[string]string {
	meta := map[string]string{"optimizer": d.s.opt.Name(), "is_defaults": "False"}
	if tun.IsDefaults() {
		meta["is_defaults"] = "True" // stored as Python writes a bool, like mlos_bench
	}
	for i, t := range d.s.opt.Targets() {
		meta["opt_target_"+strconv.Itoa(i)] = t.Name
		meta["opt_direction_"+strconv.Itoa(i)] = t.Direction()
	}
	return meta
}

// queueSuggestion stores a suggestion's trials (one per repeat), reusing
// identical results when allowed, and queues the ones to run: the first
// local of them for this process's runners (stored when they start, or at
// once when storeNow), the others stored now, unowned, for any process to
// claim.
func (d *dispatch) queueSuggestion(ctx context.Context, sg optimizers.Suggestion, local int, storeNow bool) error {
	s := d.s
	tun := sg.Tunables
	meta := d.metadata(tun)
	hash := tun.Hash()
	for r := 1; r <= d.repeats(); r++ {
		if s.cfg.MaxTrials > 0 && d.trialCount >= s.cfg.MaxTrials {
			return nil
		}
		m := maps.Clone(meta)
		repeat := strconv.Itoa(r)
		m["repeat_i"] = repeat
		spec := storage.TrialSpec{ConfigHash: hash, Params: tun.StringValues(), Metadata: m}
		// Stored only if no other process runs (or ran) this configuration
		// and repeat: the check and the insert are one transaction.
		spec.Claim = s.cfg.Reuse && !d.noReuse
		// Only a configuration and repeat that some trial of the experiment
		// already has can be reused or waited for: storage is asked only
		// then (or when other processes add trials too).
		key := hash + "|" + repeat
		mayExist := d.keys[key] || d.others || s.o.ReuseFrom != nil
		d.keys[key] = true
		if s.cfg.Reuse && mayExist && !d.noReuse {
			done, err := d.reuse(ctx, sg.ID, spec, repeat)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if s.cfg.Reuse && mayExist && !d.noReuse {
			if other, ok, err := s.exp.InFlight(ctx, hash, repeat); err != nil {
				return err
			} else if ok {
				// The same configuration and repeat is running: wait for it
				// (stored once it is settled).
				d.trialCount++
				sp := spec
				d.waiting[other.ID] = append(d.waiting[other.ID], item{spec: &sp, sugID: sg.ID})
				if _, mine := d.running[other.ID]; !mine {
					d.others = true
				}
				continue
			}
		}
		d.trialCount++
		if local <= 0 {
			// Queued ahead for other processes to claim: stored now, unowned.
			t, err := s.plain.NewTrial(ctx, spec)
			if ce := (*storage.ClaimedError)(nil); errors.As(err, &ce) {
				if err := d.claimed(ctx, item{spec: &spec, sugID: sg.ID}, ce.Trial); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			d.aheadLeft++
			s.logAdded(t)
			continue
		}
		local--
		if storeNow {
			// Stored now, held by this process, started like a claimed one.
			t, err := s.exp.NewTrial(ctx, spec)
			if ce := (*storage.ClaimedError)(nil); errors.As(err, &ce) {
				if err := d.claimed(ctx, item{spec: &spec, sugID: sg.ID}, ce.Trial); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			s.logAdded(t)
			it := d.itemFor(t)
			it.sugID = sg.ID
			d.queue = append(d.queue, it)
			continue
		}
		d.queue = append(d.queue, item{spec: &spec, sugID: sg.ID})
	}
	return nil
}

// claimed settles an item (counted in trialCount) whose configuration and
// repeat another trial holds (storage.ClaimedError), typically one that
// another process stored first: it reuses that trial's success, or waits
// for it like an identical trial in flight.
func (d *dispatch) claimed(ctx context.Context, it item, other storage.Trial) error {
	s := d.s
	s.log.Info("an identical trial is in flight or done; waiting for it instead of running it again",
		"trial", other.ID, "status", other.Status, "config_hash", other.ConfigHash)
	if other.Status == trial.SUCCEEDED && it.spec != nil {
		spec := *it.spec
		d.trialCount-- // reuse counts it again
		done, err := d.reuse(ctx, it.sugID, spec, spec.Metadata["repeat_i"])
		if err != nil || done {
			return err
		}
		d.trialCount++
	}
	d.waiting[other.ID] = append(d.waiting[other.ID], it)
	if _, mine := d.running[other.ID]; !mine {
		d.others = true
	}
	return nil
}

// reuse stores a trial that reuses the result of an identical trial that
// already SUCCEEDED (in this experiment, or in reuse_from), and tells the
// optimizer. It reports whether it did.
func (d *dispatch) reuse(ctx context.Context, sugID int, spec storage.TrialSpec, repeat string) (bool, error) {
	s := d.s
	src, ok, err := s.exp.FindSucceeded(ctx, spec.ConfigHash, repeat)
	if err != nil {
		return false, err
	}
	if !ok && s.o.ReuseFrom != nil {
		if src, ok, err = s.o.ReuseFrom.FindSucceeded(ctx, spec.ConfigHash, repeat); err != nil {
			return false, err
		}
	}
	if !ok {
		return false, nil
	}
	spec.ReusedFrom = &storage.TrialRef{ExperimentID: src.ExperimentID, TrialID: src.ID}
	spec.Claim = false // it reuses the trial that holds the claim
	t, err := s.exp.NewTrial(ctx, spec)
	if err != nil {
		return false, err
	}
	s.logAdded(t)
	d.trialCount++
	out := trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any(src.Results)}
	if err := s.exp.Finish(ctx, t.ID, out); err != nil {
		return false, err
	}
	s.stats.Reused++
	s.log.Info("trial reuses the result of an identical trial", "trial", t.ID, "from_experiment", src.ExperimentID, "from_trial", src.ID)
	d.record(item{t: t, sugID: sugID, root: t.ID}, out)
	return true, nil
}

// requeueConfig queues a configuration stored earlier (config_id).
func (d *dispatch) requeueConfig(ctx context.Context, all []storage.Trial, configID int) error {
	s := d.s
	for _, t := range all {
		if t.ConfigID == int64(configID) {
			g := s.runnerTunables()
			if err := g.Assign(stringValues(t.Params)); err != nil {
				return fmt.Errorf("config_id %d: %w", configID, err)
			}
			// An explicit re-run (mlos_bench's config_id) runs the
			// configuration again: no reuse of its stored result.
			d.noReuse = true
			defer func() { d.noReuse = false }()
			return d.queueSuggestion(ctx, optimizers.Suggestion{Tunables: g}, s.cfg.TrialConfigRepeatCount, false)
		}
	}
	return fmt.Errorf("config_id %d: no trial of experiment %q used that configuration", configID, s.cfg.ExperimentID)
}

// pickRunner takes an idle runner for it: round-robin for the
// SyncScheduler (as mlos_bench: no preference overrides it); otherwise,
// for a retry, another runner than the failed one; for a trial stored on
// a runner, that runner; and else, and among the runners a retry may use,
// preferably one whose environment is already set up for the trial's
// configuration (SetupAffine, bench_reuse_setup), then the first idle one.
func (d *dispatch) pickRunner(it item) Runner {
	i := 0
	params := it.t.Params
	if it.spec != nil {
		params = it.spec.Params
	}
	affine := func(r Runner) bool {
		a, ok := r.(SetupAffine)
		return ok && a.SetupAffinity(params)
	}
	if !d.s.cfg.Parallel {
		// Round robin over the runners, as mlos_bench's SyncScheduler.
		want := d.s.runners[d.next%len(d.s.runners)]
		d.next++
		for j, r := range d.idle {
			if r == want {
				i = j
			}
		}
	} else if it.avoid != 0 {
		first := -1
		for j, r := range d.idle {
			if r.ID() == it.avoid {
				continue
			}
			if first < 0 {
				first = j
			}
			if affine(r) {
				first = j
				break
			}
		}
		i = max(first, 0)
	} else if j := d.idleRunner(it.t.TrialRunnerID); it.t.TrialRunnerID > 0 && j >= 0 {
		i = j
	} else {
		for j, r := range d.idle {
			if affine(r) {
				i = j
				break
			}
		}
	}
	r := d.idle[i]
	d.idle = append(d.idle[:i], d.idle[i+1:]...)
	return r
}

// idleRunner returns the index of the idle runner with this id, or -1.
func (d *dispatch) idleRunner(id int) int {
	for j, r := range d.idle {
		if r.ID() == id {
			return j
		}
	}
	return -1
}

// start runs a queued trial on an idle runner in a goroutine of its own.
func (d *dispatch) start(ctx context.Context, it item) error {
	s := d.s
	runner := d.pickRunner(it)
	if it.spec != nil {
		// Stored now, started by the same write.
		spec := *it.spec
		spec.Running = true
		spec.TrialRunnerID = runner.ID()
		t, err := s.exp.NewTrial(ctx, spec)
		if ce := (*storage.ClaimedError)(nil); errors.As(err, &ce) {
			// Another process took this configuration and repeat first.
			d.idle = append(d.idle, runner)
			return d.claimed(ctx, it, ce.Trial)
		}
		if err != nil {
			d.idle = append(d.idle, runner)
			return err
		}
		it.t, it.spec = t, nil
		if it.root == 0 {
			it.root = t.ID
		}
		s.logAdded(t)
	} else if err := d.startStored(ctx, it.t.ID, runner.ID()); err != nil {
		d.idle = append(d.idle, runner)
		if errors.Is(err, storage.ErrNotOwner) || errors.Is(err, storage.ErrFinished) {
			s.log.Warn("trial taken over by another process; skipping it", "trial", it.t.ID, "err", err)
			return nil
		}
		return err
	}
	t := it.t
	t.TrialRunnerID = runner.ID()
	t.Status = trial.RUNNING
	it.t = t
	j := &job{item: it, runner: runner}
	if s.o.Devices != nil && s.o.Devices.Size() > 0 {
		slot, err := s.o.Devices.Acquire(ctx)
		if err != nil {
			d.idle = append(d.idle, runner)
			d.queue = append([]item{it}, d.queue...)
			return nil // ctx ended
		}
		j.slot = slot
	}
	var slotGlobals map[string]any
	if j.slot != nil {
		slotGlobals = j.slot.Globals()
	}
	globals := trial.Globals(s.o.Globals, t.Metadata, slotGlobals, s.cfg.ExperimentID, t.ID, runner.ID())
	spec := Spec{ExperimentID: s.cfg.ExperimentID, TrialID: t.ID, Params: t.Params, Globals: globals}
	if j.slot != nil {
		spec.ProcessEnv = j.slot.Env()
		spec.Cores = j.slot.Cores
	}
	if s.cfg.IdleTimeout > 0 {
		j.act = services.NewActivity()
		spec.Activity = j.act
	}
	spec.TelemetryInterval = s.cfg.TelemetryInterval
	id := t.ID
	spec.Attach = func(ctx context.Context, h Handle) error {
		err := s.exp.SetJob(ctx, id, h)
		if err == nil {
			j.attached.Store(true)
		}
		return err
	}
	jctx, cancel := context.WithCancelCause(ctx)
	j.cancel = cancel
	d.running[t.ID] = j
	if d.beat != nil {
		d.beat.busy.Store(true) // before anything else runs here (Suggest)
	}
	s.stats.Run++
	s.logExecute(t)
	if s.o.Observer != nil {
		s.o.Observer.TrialStarted(t)
	}
	go d.run(ctx, jctx, j, spec)
	return nil
}

// startStored records a stored trial as started on a runner.
func (d *dispatch) startStored(ctx context.Context, id, runnerID int) error {
	if err := d.s.exp.SetTrialRunner(ctx, id, runnerID); err != nil {
		return err
	}
	return d.s.exp.UpdateStatus(ctx, id, trial.RUNNING, time.Time{})
}

// run is a trial's goroutine: run it, score it, store the outcome.
func (d *dispatch) run(ctx, jctx context.Context, j *job, spec Spec) {
	s := d.s
	defer j.cancel(nil)
	var out trial.Outcome
	if rec, ok := j.runner.(Recoverer); ok && j.t.Job != nil && j.t.Job.Engine == rec.Engine() {
		// The trial's job outlived an earlier bench: follow it.
		s.log.Info("re-attaching to the trial's running job", "trial", j.t.ID, "engine", j.t.Job.Engine, "job", j.t.Job.Ref)
		out = rec.Recover(jctx, spec, *j.t.Job)
	} else {
		if j.t.Job != nil {
			s.log.Warn("the trial ran as a job of another engine that this run does not use; running it again here",
				"trial", j.t.ID, "engine", j.t.Job.Engine, "job", j.t.Job.Ref)
		}
		out = j.runner.Run(jctx, spec)
	}
	if ctx.Err() != nil {
		// Interrupted: leave the trial unfinished so that a resume runs it
		// again; nothing of this partial run is stored.
		d.results <- done{j: j, interrupted: true}
		return
	}
	if final, err := trial.RunEnd(out.Status); err != nil {
		out = trial.Outcome{Status: trial.FAILED, Ts: out.Ts, Telemetry: out.Telemetry, Output: out.Output,
			FailureReason: fmt.Sprintf("runner %d returned a trial outcome with %v", j.runner.ID(), err)}
	} else if !final {
		// The run ended READY (or PENDING, RUNNING): as mlos_bench does, the
		// trial keeps that status, unfinished, without results, and the
		// optimizer never sees it; a resume runs it again.
		err := s.exp.UpdateStatus(context.WithoutCancel(ctx), j.t.ID, out.Status, out.Ts)
		d.results <- done{j: j, out: out, unfinished: true, storeErr: err}
		return
	}
	out = s.targets.Finalize(out)
	err := s.exp.Finish(context.WithoutCancel(ctx), j.t.ID, out)
	if errors.Is(err, storage.ErrFinished) && (j.t.Job != nil || j.attached.Load()) {
		// The job's far side stored the outcome itself (shared storage):
		// that is the trial's outcome.
		if stored, lerr := s.exp.Trial(context.WithoutCancel(ctx), j.t.ID); lerr == nil {
			out, err = stored.Outcome(), nil
		}
	}
	d.results <- done{j: j, out: out, storeErr: err}
}

// finished handles a trial's end in the dispatcher.
func (d *dispatch) finished(ctx context.Context, r done) error {
	s := d.s
	j := r.j
	delete(d.running, j.t.ID)
	d.idle = append(d.idle, j.runner)
	if j.slot != nil {
		s.o.Devices.Release(j.slot)
	}
	if r.interrupted {
		s.stats.Run--
		s.log.Warn("trial interrupted; it will run again when the experiment is resumed", "trial", j.t.ID)
		return nil
	}
	if r.storeErr != nil {
		if errors.Is(r.storeErr, storage.ErrNotOwner) {
			s.log.Warn("trial was taken over by another process while it ran; its outcome is not stored here", "trial", j.t.ID, "err", r.storeErr)
			return nil
		}
		return fmt.Errorf("storing the outcome of trial %d: %w", j.t.ID, r.storeErr)
	}
	out := r.out
	if r.unfinished {
		s.log.Warn("the environment's run ended without a final status; as in mlos_bench, the trial keeps it, unfinished and without results, the optimizer does not see it, and a resume runs it again",
			"trial", j.t.ID, "status", out.Status)
		d.observed[j.t.ID] = true
		// Trials waiting for its result run themselves.
		d.resolveWaiting(ctx, j.t.ID, out)
		return d.canaryDone(out)
	}
	if out.Status.IsFailed() && j.attempt < s.cfg.MaxRetries && ctx.Err() == nil {
		return d.retry(ctx, j, out)
	}
	d.record(j.item, out)
	d.resolveWaiting(ctx, j.t.ID, out)
	if err := d.canaryDone(out); err != nil {
		return err
	}
	return d.checkStop(out)
}

// record counts an outcome stored for it, tells the optimizer and the
// observer.
func (d *dispatch) record(it item, out trial.Outcome) {
	s := d.s
	t := it.t
	t.Status = out.Status
	t.TsEnd = out.Ts
	t.FailureReason = out.FailureReason
	own := func(n *int) {
		if !it.foreign {
			*n++
		}
	}
	switch out.Status {
	case trial.SUCCEEDED:
		own(&s.stats.Succeeded)
		d.succeeded++
		if scores, err := s.targets.Scores(out.Status, out.Results); err == nil {
			if d.best == nil || trial.BetterTrial(scores, t.ID, s.targets.Values(d.best.Values), d.best.TrialID) {
				d.best = &Best{TrialID: t.ID, Values: s.targets.Values(scores)}
			}
		}
	case trial.FAILED, trial.TIMED_OUT:
		own(&s.stats.Failed)
		d.failed++
		if d.succeeded == 0 && len(d.firstFailures) < max(s.cfg.FailFast, 0) {
			d.firstFailures = append(d.firstFailures, signature(out.FailureReason))
			if d.firstReason == "" {
				d.firstReason = out.FailureReason
			}
		}
	case trial.CANCELED:
		own(&s.stats.Canceled)
	}
	if out.Status != trial.CANCELED {
		sc, _ := s.targets.Scores(out.Status, out.Results)
		d.observeStop(out.Results, sc)
		d.race(it, out, sc)
	}
	s.logFinished(t, out)
	d.observed[t.ID] = true
	if out.Status != trial.CANCELED && !s.o.Worker {
		tun := s.runnerTunables()
		if err := tun.Assign(stringValues(t.Params)); err == nil {
			// As mlos_bench's "Iteration N": the number of suggestions the
			// optimizer has made so far.
			s.logRegister(d.suggestions, tun, out)
			if _, err := s.opt.Observe(it.sugID, tun, out.Status, out.Results); err != nil {
				s.log.Warn("optimizer could not take in a result", "trial", t.ID, "err", err)
			}
		}
	}
	if s.o.Observer != nil {
		s.o.Observer.TrialFinished(t, out, d.best)
	}
}

// runnerTunables returns a copy of the tunables a stored configuration is
// assigned to for the optimizer.
func (s *Scheduler) runnerTunables() *tunables.Groups { return s.o.Tunables.Copy() }

// retry queues another attempt of a failed trial, preferably on another
// runner; the optimizer only sees the last attempt.
func (d *dispatch) retry(ctx context.Context, j *job, out trial.Outcome) error {
	s := d.s
	spec := storage.TrialSpec{ConfigHash: j.t.ConfigHash, Params: j.t.Params, Metadata: j.t.Metadata, RetryOf: j.root}
	t, err := s.exp.NewTrial(ctx, spec)
	if err != nil {
		return err
	}
	s.logAdded(t)
	s.stats.Retried++
	d.retryCount[j.root]++
	// The reason is on the trial's own line (the observer's); the log
	// file gets it here too.
	s.log.Warn("trial failed; retrying it", "trial", j.t.ID, "status", out.Status, "retry_trial", t.ID,
		"attempt", j.attempt+2, "of", s.cfg.MaxRetries+1)
	s.log.Info("trial failed", "trial", j.t.ID, "reason", out.FailureReason)
	failed := j.t
	failed.Status = out.Status
	if s.o.Observer != nil {
		s.o.Observer.TrialFinished(failed, out, d.best)
	}
	it := item{t: t, sugID: j.sugID, root: j.root, attempt: j.attempt + 1, avoid: j.runner.ID()}
	d.queue = append([]item{it}, d.queue...)
	// The retry stands in for the failed trial for trials waiting on it.
	if w := d.waiting[j.t.ID]; len(w) > 0 {
		delete(d.waiting, j.t.ID)
		d.waiting[t.ID] = w
	}
	return nil
}

// resolveWaiting settles the trials that waited for trial id's result:
// they reuse a success, and run themselves after a failure.
func (d *dispatch) resolveWaiting(ctx context.Context, id int, out trial.Outcome) {
	s := d.s
	ws := d.waiting[id]
	if len(ws) == 0 {
		return
	}
	delete(d.waiting, id)
	for _, it := range ws {
		if out.Status == trial.SUCCEEDED {
			spec := *it.spec
			spec.Claim = false // it reuses the trial that holds the claim
			spec.ReusedFrom = &storage.TrialRef{ExperimentID: s.cfg.ExperimentID, TrialID: id}
			if t, err := s.exp.NewTrial(ctx, spec); err == nil {
				s.logAdded(t)
				reused := trial.Outcome{Status: trial.SUCCEEDED, Results: out.Results}
				if err := s.exp.Finish(ctx, t.ID, reused); err == nil {
					s.stats.Reused++
					it.t, it.spec = t, nil
					d.record(it, reused)
					continue
				}
			}
		}
		d.queue = append(d.queue, it)
	}
}

var digits = regexp.MustCompile(`[0-9]+`)
var tmpPaths = regexp.MustCompile(`/tmp/[^\s"']*`)

// signature normalizes a failure reason so that the same failure of two
// trials compares equal (numbers and temporary paths left out).
func signature(reason string) string {
	r := tmpPaths.ReplaceAllString(reason, "/tmp/…")
	r = digits.ReplaceAllString(r, "#")
	return strings.Join(strings.Fields(r), " ")
}

// checkStop stops the experiment when its failure budget is spent or its
// first trials all failed the same way.
func (d *dispatch) checkStop(out trial.Outcome) error {
	s := d.s
	if s.cfg.MaxFailedTrials > 0 && d.failed >= s.cfg.MaxFailedTrials {
		return fmt.Errorf("%w: %d trials failed, the failure budget (max_failed_trials %d) is spent; the last failure: %s",
			ErrStopped, d.failed, s.cfg.MaxFailedTrials, out.FailureReason)
	}
	// Fail-fast saves the rest of the budget: none left, nothing to save.
	if n := s.cfg.FailFast; n > 0 && d.succeeded == 0 && len(d.firstFailures) >= n && (d.notDone() || len(d.queue) > 0) {
		same := true
		for _, f := range d.firstFailures[1:n] {
			if f != d.firstFailures[0] {
				same = false
				break
			}
		}
		if same {
			return fmt.Errorf("%w early: the first %d trials all failed the same way, so the rest of the budget would likely fail too (fail_fast %d; set it to 0 to go on regardless): %s",
				ErrStopped, n, n, d.firstReason)
		}
		d.firstFailures = d.firstFailures[:0:0]
		d.s.cfg.FailFast = 0 // not all the same: fail-fast is done
	}
	return nil
}

// tick renews the lease, looks for stop requests and hung trials, and
// picks up other processes' results.
func (d *dispatch) tick(ctx context.Context) error {
	s := d.s
	now := time.Now()
	if s.cfg.IdleTimeout > 0 {
		for _, j := range d.running {
			if idle := now.Sub(j.act.LastActive()); idle > s.cfg.IdleTimeout {
				j.cancel(fmt.Errorf("no output and no telemetry for %s (trial_idle_timeout %s): %w",
					idle.Round(time.Second), s.cfg.IdleTimeout, services.ErrTimeout))
			}
		}
	}
	if now.Sub(d.lastStop) >= time.Second || s.o.Tick >= time.Second {
		d.lastStop = now
		if err := d.stopRequests(ctx); err != nil {
			return err
		}
		if !d.others && !s.o.Worker {
			d.detectOthers(ctx)
		}
		if !s.o.Worker && d.stopErr == nil {
			if err := d.feedWorkers(ctx); err != nil {
				return err
			}
		}
	}
	if d.others && !s.o.Worker && (now.Sub(d.lastPoll) >= time.Second || len(d.running) == 0) {
		d.lastPoll = now
		if err := d.pollOthers(ctx); err != nil {
			return err
		}
	}
	return nil
}

// feedWorkers keeps as many trials queued, unowned, as the experiment's
// live workers have trial runners (plus queue_ahead), so that bench worker
// processes find work without any setting.
func (d *dispatch) feedWorkers(ctx context.Context) error {
	s := d.s
	n, err := s.exp.WorkerRunners(ctx)
	if err != nil || n == 0 {
		return err
	}
	d.others = true
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return err
	}
	unowned := 0
	for _, t := range pending {
		if t.Owner == "" && !t.StopRequested {
			unowned++
		}
	}
	need := n + s.cfg.QueueAhead - unowned
	if need <= 0 || !d.notDone() {
		return nil
	}
	if c, err := d.countTrials(ctx); err == nil {
		d.trialCount = c
	}
	k := s.cfg.budget().Suggestions(need, 0, d.trialCount)
	if k < 1 || !d.notDone() {
		return nil
	}
	sugs, err := s.opt.Suggest(ctx, k)
	if err != nil {
		return fmt.Errorf("optimizer %s: %w", s.opt.Name(), err)
	}
	d.suggestions += len(sugs)
	if len(sugs) == 0 {
		d.noMore = true
	}
	for _, sg := range sugs {
		if err := d.queueSuggestion(ctx, sg, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// detectOthers notices trials that another process added to the
// experiment: from then on the budget, dedup and results are read from
// storage.
func (d *dispatch) detectOthers(ctx context.Context) {
	counts, err := d.s.exp.Counts(ctx)
	if err != nil {
		return
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	mine := d.trialCount + len(d.queue) // an upper bound of what this process knows
	for _, c := range d.retryCount {
		mine += c
	}
	if n > mine {
		d.others = true
	}
}

// errStopRequested is the cause of a trial stopped by bench stop.
var errStopRequested = errors.New("stopped on request (bench stop)")

// errStopExperiment marks a run ended by bench stop EXPERIMENT (its text
// is empty: the message says it already).
var errStopExperiment = errors.New("")

// stopRequests cancels the trials bench stop asked to stop.
func (d *dispatch) stopRequests(ctx context.Context) error {
	s := d.s
	all, ids, err := s.exp.StopRequests(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	stop := map[int]bool{}
	for _, id := range ids {
		stop[id] = true
	}
	for id, j := range d.running {
		if all || stop[id] {
			j.cancel(errStopRequested)
		}
	}
	// A queued trial that no process holds (queued ahead for workers) is
	// stopped here: no process will claim it.
	for _, id := range ids {
		if _, mine := d.running[id]; mine || d.queued(id) {
			continue
		}
		t, err := s.plain.Trial(ctx, id)
		if err != nil || t.Finished() || t.Owner != "" {
			continue
		}
		out := trial.Outcome{Status: trial.CANCELED, FailureReason: errStopRequested.Error()}
		if err := s.plain.Finish(ctx, id, out); err == nil {
			d.record(item{t: t.Trial, root: id, foreign: true}, out)
		}
	}
	keep := d.queue[:0]
	for _, it := range d.queue {
		if all || stop[it.t.ID] {
			out := trial.Outcome{Status: trial.CANCELED, FailureReason: errStopRequested.Error()}
			if err := s.exp.Finish(ctx, it.t.ID, out); err == nil {
				d.record(it, out)
			}
			continue
		}
		keep = append(keep, it)
	}
	d.queue = keep
	if all && d.stopErr == nil {
		d.stopErr = fmt.Errorf("%w on request (bench stop %s)%w", ErrStopped, s.cfg.ExperimentID, errStopExperiment)
	}
	return nil
}

// queued reports whether trial id is in this process's queue.
func (d *dispatch) queued(id int) bool {
	for _, it := range d.queue {
		if it.spec == nil && it.t.ID == id {
			return true
		}
	}
	return false
}

// pollOthers observes the outcomes of trials other processes finished:
// those the storage's change feed says changed since the last poll (no
// scan of every trial), and the unfinished ones (whose owners may have
// died).
func (d *dispatch) pollOthers(ctx context.Context) error {
	s := d.s
	changed, seq, err := s.exp.Changes(ctx, d.feedSeq)
	if err != nil {
		return err
	}
	d.feedSeq = seq
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return err
	}
	others := false
	for _, t := range pending {
		if t.Owner != "" && t.Owner != s.o.Owner {
			others = true
			if trial.TakeOver(t.Owner, s.o.Owner, false) {
				// A process of this host died: take its trials over now.
				if err := s.plain.WithOwner(t.Owner, s.cfg.Lease).Release(ctx); err != nil {
					return err
				}
			}
		}
	}
	last := lastAttempts(append(changed, pending...))
	for _, t := range changed {
		if !t.Finished() {
			continue
		}
		if d.observed[t.ID] {
			continue
		}
		if _, mine := d.running[t.ID]; mine {
			continue
		}
		out := t.Outcome()
		if t.Status.IsFailed() && retriedLater(last, t) {
			d.observed[t.ID] = true
			continue
		}
		d.record(item{t: t, root: t.ID, foreign: true}, out)
		d.resolveWaiting(ctx, t.ID, out)
		if err := d.checkStop(out); err != nil {
			return err
		}
	}
	d.others = others || len(d.waiting) > 0
	return nil
}

// Package schedulers runs the optimization loop (mlos_bench's Scheduler and
// TrialRunner): ask the optimizer for configurations, queue them as trials
// in storage, run each trial on an environment, store the outcome, feed
// the results back, and resume an interrupted experiment where it stopped.
package schedulers

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/tunables"
)

// Config is the scheduler's config (mlos_bench's SyncScheduler keys).
type Config struct {
	ExperimentID string
	// TrialID is the id of the first trial of a new experiment.
	TrialID int
	// ConfigID, when > 0, re-runs that stored configuration first.
	ConfigID               int
	Teardown               bool
	MaxTrials              int // <= 0: no limit
	TrialConfigRepeatCount int // >= 1
}

// Observer is told about the progress of an experiment (for progress bars
// and logs). Methods are called from the scheduler's goroutine.
type Observer interface {
	TrialStarted(t storage.Trial)
	TrialFinished(t storage.Trial, outcome storage.TrialOutcome, scores []float64)
}

// Scheduler runs trials one after another on its trial runners (assigned
// round-robin), like mlos_bench's SyncScheduler.
type Scheduler struct {
	cfg       Config
	runners   []*TrialRunner
	opt       optimizers.Optimizer
	exp       storage.Experiment
	globals   map[string]any
	observer  Observer
	log       *slog.Logger
	teardownT time.Duration

	lastTrialID int
	nextRunner  int
	// queued holds the trials queued by this process, not yet run; fresh
	// the results finished since the optimizer last saw results. After the
	// warm-up (which reads storage), the loop works from these instead of
	// re-reading storage for every trial.
	queued     []storage.Trial
	fresh      []optimizers.Prior
	warm       bool
	trialCount int // trials of the experiment, queued or finished
	stats      Stats
	// held is the outcome of the last trial while the optimizer takes it
	// in and suggests the next configuration: it is then stored in the
	// same transaction that queues the next trial (one commit per trial).
	// Every other storage call stores it first (flush). slowOptimizer
	// turns this off when the optimizer's last turn took longer than
	// holdLimit, so that an outcome never waits long unstored.
	held          *heldOutcome
	slowOptimizer bool
}

type heldOutcome struct {
	trial   storage.Trial
	outcome storage.TrialOutcome
	scores  []float64
}

// holdLimit bounds how long the optimizer may take between a trial's end
// and the next trial's queuing for the trial's outcome to wait for that
// commit instead of being committed on its own.
const holdLimit = 10 * time.Millisecond

// Stats summarizes what a Start call did.
type Stats struct {
	// Planned is the number of trials the budget allows (0: unknown).
	Planned   int
	Run       int // trials run by this process
	Succeeded int
	Failed    int // FAILED or TIMED_OUT
	Resumed   int // trials that were already finished before this process
	// Remaining counts trials left pending (interrupted runs).
	Remaining int
}

// Options are the optional parts of a scheduler.
type Options struct {
	Observer Observer
	Logger   *slog.Logger
	// TeardownTimeout bounds the final teardown (default 10 minutes).
	TeardownTimeout time.Duration
}

// New returns a scheduler.
func New(cfg Config, runners []*TrialRunner, opt optimizers.Optimizer, exp storage.Experiment, globals map[string]any, o Options) (*Scheduler, error) {
	if len(runners) == 0 {
		return nil, errors.New("scheduler: no trial runners")
	}
	if cfg.TrialConfigRepeatCount < 1 {
		cfg.TrialConfigRepeatCount = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TeardownTimeout <= 0 {
		o.TeardownTimeout = 10 * time.Minute
	}
	return &Scheduler{cfg: cfg, runners: runners, opt: opt, exp: exp, globals: globals,
		observer: o.Observer, log: o.Logger, teardownT: o.TeardownTimeout}, nil
}

// Stats returns what the scheduler did so far.
func (s *Scheduler) Stats() Stats { return s.stats }

// Optimizer returns the scheduler's optimizer.
func (s *Scheduler) Optimizer() optimizers.Optimizer { return s.opt }

// Start runs the optimization loop until the optimizer has converged or
// max_trials is reached, then tears the environments down (when teardown
// is on). On resume, unfinished trials run first and finished ones are
// fed back to the optimizer; the budget (max_suggestions, max_trials)
// counts the experiment's trials from earlier runs too.
//
// When ctx is cancelled, the running trial is stopped (its processes
// killed) and left unfinished in storage, to run again on resume; teardown
// still runs, and Start returns ctx.Err().
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.resumeBudget(ctx); err != nil {
		return err
	}
	if s.cfg.ConfigID > 0 {
		if err := s.requeueConfig(ctx, s.cfg.ConfigID); err != nil {
			return err
		}
	}
	warmUp := s.opt.SupportsPreload()
	runErr := func() error {
		for {
			if err := s.runSchedule(ctx, warmUp); err != nil {
				return err
			}
			turn := time.Now()
			if err := s.registerResults(ctx); err != nil {
				return err
			}
			warmUp = false
			if !s.notDone() {
				return nil
			}
			tun, err := s.opt.Suggest(ctx)
			if err != nil {
				return fmt.Errorf("optimizer %s: %w", s.opt.Name(), err)
			}
			s.slowOptimizer = time.Since(turn) > holdLimit
			if err := s.queue(ctx, tun); err != nil {
				return err
			}
		}
	}()
	// The last outcome is stored even when the loop stopped on an error or
	// an interruption.
	if err := s.flush(context.WithoutCancel(ctx)); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if pending, err := s.exp.PendingTrials(context.WithoutCancel(ctx)); err == nil {
		s.stats.Remaining = len(pending)
	}
	tdErr := s.teardown(ctx)
	return errors.Join(runErr, tdErr)
}

// resumeBudget counts the suggestions and trials of earlier runs so that a
// resumed experiment completes its budget instead of starting a new one.
func (s *Scheduler) resumeBudget(ctx context.Context) error {
	trials, err := s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return err
	}
	suggestions := 0
	for _, t := range trials {
		if t.Finished() {
			s.stats.Resumed++
		}
		if r := t.Metadata["repeat_i"]; r == "" || r == "1" {
			suggestions++
		}
	}
	s.trialCount = len(trials)
	if sk, ok := s.opt.(interface{ Skip(n int) }); ok && suggestions > 0 {
		sk.Skip(suggestions)
	}
	s.lastTrialID = 0
	s.stats.Planned = s.planned()
	return nil
}

func (s *Scheduler) planned() int {
	n := s.opt.MaxSuggestions() * s.cfg.TrialConfigRepeatCount
	if s.cfg.MaxTrials > 0 && (n <= 0 || s.cfg.MaxTrials < n) {
		n = s.cfg.MaxTrials
	}
	return n
}

func (s *Scheduler) notDone() bool {
	return s.opt.NotConverged() && (s.cfg.MaxTrials <= 0 || s.trialCount < s.cfg.MaxTrials)
}

// registerResults feeds the trials finished since the last call to the
// optimizer. The first call reads them from storage (the warm start of a
// resume, and the trials of the warm-up); later calls use the outcomes this
// process just stored.
func (s *Scheduler) registerResults(ctx context.Context) error {
	if s.warm {
		priors := s.fresh
		s.fresh = nil
		if len(priors) == 0 {
			return nil
		}
		return s.opt.BulkRegister(priors)
	}
	s.warm = true
	s.fresh = nil
	if err := s.flush(ctx); err != nil {
		return err
	}
	done, err := s.exp.CompletedTrials(ctx, s.lastTrialID)
	if err != nil {
		return err
	}
	if len(done) == 0 {
		return nil
	}
	priors := make([]optimizers.Prior, 0, len(done))
	for _, t := range done {
		priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results)})
		s.lastTrialID = max(s.lastTrialID, t.ID)
	}
	return s.opt.BulkRegister(priors)
}

func stringValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// queue adds a configuration to storage trial_config_repeat_count times,
// each assigned to a trial runner round-robin.
func (s *Scheduler) queue(ctx context.Context, tun *tunables.Groups) error {
	meta := map[string]string{"optimizer": s.opt.Name(), "is_defaults": "False"}
	if tun.IsDefaults() {
		meta["is_defaults"] = "True" // stored as Python writes a bool, like mlos_bench
	}
	for i, t := range s.opt.Targets() {
		meta["opt_target_"+strconv.Itoa(i)] = t.Name
		meta["opt_direction_"+strconv.Itoa(i)] = t.Direction()
	}
	for r := 1; r <= s.cfg.TrialConfigRepeatCount; r++ {
		m := maps.Clone(meta)
		m["repeat_i"] = strconv.Itoa(r)
		runner := s.runners[s.nextRunner]
		s.nextRunner = (s.nextRunner + 1) % len(s.runners)
		t, err := s.newTrial(ctx, storage.TrialSpec{
			ConfigHash:    tun.Hash(),
			Params:        tun.StringValues(),
			Metadata:      m,
			TrialRunnerID: runner.ID,
			// Trials run one after another as soon as they are queued: the
			// first is recorded as started in the same transaction.
			Running: r == 1,
		})
		if err != nil {
			return err
		}
		s.queued = append(s.queued, t)
		s.trialCount++
	}
	return nil
}

// newTrial queues a trial, storing the held outcome of the previous trial
// in the same transaction.
func (s *Scheduler) newTrial(ctx context.Context, spec storage.TrialSpec) (storage.Trial, error) {
	h := s.held
	if h == nil {
		return s.exp.NewTrial(ctx, spec)
	}
	t, err := s.exp.FinishAndQueue(context.WithoutCancel(ctx), h.trial.ID, h.outcome, spec)
	if err != nil {
		// Store the outcome on its own, then report (or get past) what
		// failed in queuing the next trial.
		if err := s.flush(ctx); err != nil {
			return storage.Trial{}, err
		}
		return s.exp.NewTrial(ctx, spec)
	}
	s.held = nil
	s.stored(h)
	return t, nil
}

// flush stores the held outcome, if any.
func (s *Scheduler) flush(ctx context.Context) error {
	h := s.held
	if h == nil {
		return nil
	}
	if err := s.exp.Finish(context.WithoutCancel(ctx), h.trial.ID, h.outcome); err != nil {
		return fmt.Errorf("storing the outcome of trial %d: %w", h.trial.ID, err)
	}
	s.held = nil
	s.stored(h)
	return nil
}

// stored tells the observer about a trial whose outcome is now stored.
func (s *Scheduler) stored(h *heldOutcome) {
	if s.observer != nil {
		t := h.trial
		t.Status = h.outcome.Status
		s.observer.TrialFinished(t, h.outcome, h.scores)
	}
}

// requeueConfig queues a configuration stored earlier (config_id).
func (s *Scheduler) requeueConfig(ctx context.Context, configID int) error {
	trials, err := s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return err
	}
	for _, t := range trials {
		if t.ConfigID == int64(configID) {
			tun := s.runners[0].Env.Tunables().Copy()
			if err := tun.Assign(stringValues(t.Params)); err != nil {
				return fmt.Errorf("config_id %d: %w", configID, err)
			}
			return s.queue(ctx, tun)
		}
	}
	return fmt.Errorf("config_id %d: no trial of experiment %q used that configuration", configID, s.cfg.ExperimentID)
}

// runSchedule runs the queued trials (on warm-up also the ones left
// READY or RUNNING by an interrupted run).
func (s *Scheduler) runSchedule(ctx context.Context, running bool) error {
	var pending []storage.Trial
	if s.warm {
		pending, s.queued = s.queued, nil
		running = true // queued by this process: all of them run
	} else {
		var err error
		if pending, err = s.exp.PendingTrials(ctx); err != nil {
			return err
		}
		s.queued = nil
	}
	for _, t := range pending {
		if !running && t.Status != trial.PENDING {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		runner := s.runnerFor(t)
		if err := s.flush(ctx); err != nil {
			return err
		}
		if t.TrialRunnerID != runner.ID {
			if err := s.exp.SetTrialRunner(ctx, t.ID, runner.ID); err != nil {
				return err
			}
			t.TrialRunnerID = runner.ID
		}
		if err := s.runTrial(ctx, runner, t); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scheduler) runnerFor(t storage.Trial) *TrialRunner {
	for _, r := range s.runners {
		if r.ID == t.TrialRunnerID {
			return r
		}
	}
	r := s.runners[s.nextRunner]
	s.nextRunner = (s.nextRunner + 1) % len(s.runners)
	return r
}

// runTrial runs one trial; runSchedule has stored any held outcome.
func (s *Scheduler) runTrial(ctx context.Context, runner *TrialRunner, t storage.Trial) error {
	if s.observer != nil {
		s.observer.TrialStarted(t)
	}
	tun := runner.Env.Tunables().Copy()
	if err := tun.Assign(stringValues(t.Params)); err != nil {
		// The stored configuration no longer fits (tunables changed):
		// record it as failed rather than stopping the experiment.
		outcome := storage.TrialOutcome{Status: trial.FAILED, FailureReason: "configuration does not fit the current tunables: " + err.Error()}
		return s.finish(ctx, t, outcome, nil)
	}
	globals := maps.Clone(s.globals)
	for k, v := range t.Metadata {
		if _, ok := globals[k]; !ok {
			globals[k] = v
		}
	}
	globals["experiment_id"] = s.cfg.ExperimentID
	globals["trial_id"] = int64(t.ID)
	globals["trial_runner_id"] = int64(runner.ID)

	s.stats.Run++
	if !(s.warm && t.Status == trial.RUNNING) { // else NewTrial recorded the start just now
		if err := s.exp.UpdateStatus(ctx, t.ID, trial.RUNNING, time.Time{}); err != nil {
			return err
		}
	}
	outcome := runner.Run(ctx, tun, globals)
	if ctx.Err() != nil {
		// Interrupted: leave the trial unfinished so that a resume runs it
		// again; nothing of this partial run is stored.
		s.log.Warn("trial interrupted; it will run again when the experiment is resumed", "trial", t.ID)
		s.stats.Run--
		return ctx.Err()
	}
	var scores []float64
	if outcome.Status == trial.SUCCEEDED {
		sc, err := scoreOf(s.opt, outcome.Results)
		if err != nil {
			outcome.Status = trial.FAILED
			outcome.FailureReason = err.Error()
		} else {
			scores = sc
		}
	}
	return s.finish(ctx, t, outcome, scores)
}

// scoreOf checks that the results hold the optimization targets.
func scoreOf(opt optimizers.Optimizer, results map[string]any) ([]float64, error) {
	out := make([]float64, 0, len(opt.Targets()))
	for _, tg := range opt.Targets() {
		v, ok := results[tg.Name]
		if !ok {
			return nil, fmt.Errorf("the trial succeeded but its results have no %q metric (the optimization target)", tg.Name)
		}
		f, ok := optimizers.Numeric(v)
		if !ok || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the optimization target %q is %v, not a number", tg.Name, v)
		}
		out = append(out, f)
	}
	return out, nil
}

// finish records a trial's outcome: it is held for the next trial's
// queuing (see held) unless the optimizer is slow, and stored now then.
func (s *Scheduler) finish(ctx context.Context, t storage.Trial, outcome storage.TrialOutcome, scores []float64) error {
	if outcome.Status != trial.CANCELED {
		s.fresh = append(s.fresh, optimizers.Prior{Values: stringValues(t.Params), Status: outcome.Status, Results: outcome.Results})
	}
	switch outcome.Status {
	case trial.SUCCEEDED:
		s.stats.Succeeded++
	case trial.FAILED, trial.TIMED_OUT:
		s.stats.Failed++
	}
	s.held = &heldOutcome{trial: t, outcome: outcome, scores: scores}
	if s.slowOptimizer || !s.warm {
		return s.flush(ctx)
	}
	return nil
}

// teardown tears every runner's environment down when configured to, even
// after a cancellation (with its own time limit).
func (s *Scheduler) teardown(ctx context.Context) error {
	if !s.cfg.Teardown {
		return nil
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.teardownT)
	defer cancel()
	var errs []error
	for _, r := range s.runners {
		if err := r.Teardown(tctx); err != nil {
			errs = append(errs, fmt.Errorf("teardown of trial runner %d: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// ErrTimeout is re-exported for callers mapping errors to statuses.
var ErrTimeout = services.ErrTimeout

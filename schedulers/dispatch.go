// The dispatch loop: the state of one Start call and the loop that drives it.

package schedulers

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

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
// goroutine. Its state is split by concern, each part declared in (and
// changed only by) the file of its concern; the parts are embedded so that
// their fields read as the dispatcher's own (d.queue, d.trialCount, ...).
type dispatch struct {
	s *Scheduler
	// clock is the scheduler's clock (Options.Clock).
	clock        Clock
	loopState    // the dispatch loop (this file)
	runnerPool   // runners and running trials (runpool.go)
	budgetState  // the budget and the optimizer's suggestions (budget.go)
	reuseState   // dedup and config_id re-runs (reuse.go)
	failureState // retries, the failure budget and fail-fast (failure.go)
	coordState   // other processes' trials (coord.go)
	recordState  // what was recorded and observed (record.go)
}

// loopState is the dispatch loop's own state: the queue, the results of
// the trials' goroutines, the loop's timers and why it stops.
type loopState struct {
	canary  bool // the first trial runs alone (canary.go)
	queue   []item
	results chan done
	// lastStop is when the stop requests were last read (tick).
	lastStop time.Time
	stopErr  error
	// beat renews the leases (nil outside loop).
	beat *heartbeat
	// stop applies the stopping rules (noise.go); stopApplied is set once
	// the queue was cut when one fired.
	stop        *stopper
	stopApplied bool
	searchEnd   string // why the search ended, before a confirmation
	racing      *racer // adaptive or spread repeats (racing.go)
	// remoteOn holds the remote pool's runners in service (remote.go).
	remoteOn map[Runner]bool
}

func (s *Scheduler) newDispatch(ctx context.Context) (*dispatch, error) {
	d := &dispatch{s: s, clock: s.clock(),
		loopState:    loopState{results: make(chan done, len(s.runners)), stop: newStopper(s.cfg.Noise, s.clock().Now)},
		runnerPool:   runnerPool{running: map[int]*job{}},
		reuseState:   reuseState{waiting: map[int][]item{}, keys: map[string]bool{}},
		failureState: failureState{retryCount: map[int]int{}},
		recordState:  recordState{observed: map[int]bool{}}}
	d.idle = append(d.idle, s.localRunners()...)
	all, seq, err := s.exp.Changes(ctx, 0)
	if err != nil {
		return nil, err
	}
	d.feedSeq = seq
	d.knowTrials(all) // coord.go
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
		if t.Status != trial.CANCELED && !trial.LowFidelity(t.Metadata) { // a lower-fidelity result is no full outcome
			priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results)})
		} else {
			unobserved = append(unobserved, stringValues(t.Params))
		}
	}
	if priors, unobserved, suggestions, err = d.fidelityResume(all, priors, unobserved, suggestions); err != nil { // fidelity.go
		return nil, err
	}
	d.configsBeyond = configsBeyond(all, suggestions)
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
		if err := s.registerWorker(ctx); err != nil {
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

// loop runs until there is nothing left to run (or ctx ends).
func (d *dispatch) loop(ctx context.Context) error {
	s := d.s
	tick := d.clock.NewTicker(s.o.Tick)
	defer tick.Stop()
	// Leases are renewed off this goroutine: Suggest may take longer
	// than a lease.
	d.beat = s.startHeartbeat(ctx)
	defer d.beat.stop()
	for {
		d.beat.busy.Store(len(d.running) > 0 || len(d.queue) > 0)
		d.syncRemote(ctx)
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
		case <-tick.C():
			if err := d.tick(ctx); err != nil && d.stopErr == nil {
				d.stopErr = err
			}
			if s.o.onTick != nil {
				s.o.onTick()
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
	if len(d.queue) > 0 || len(d.waiting) > 0 || d.deferredLeft() || d.fidelityMore() {
		return true, nil
	}
	if s.cfg.DriverOnly && !s.o.Worker && d.notDone() && d.stopErr == nil {
		// Only workers run trials: wait for them to come (tick polls).
		d.others = true
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
			d.others, d.busy = true, true // tick polls at every tick
			return true, nil
		}
	}
	return false, nil
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

// notDone reports whether the budget allows more suggestions.
func (d *dispatch) notDone() bool {
	s := d.s
	return !d.noMore && !d.budgetSpent && s.opt.NotConverged() && (s.cfg.MaxTrials <= 0 || d.trialCount < s.cfg.MaxTrials) && !d.stopFired()
}

// tick renews the lease, looks for stop requests and hung trials, and
// picks up other processes' results.
func (d *dispatch) tick(ctx context.Context) error {
	s := d.s
	now := d.clock.Now()
	if s.cfg.IdleTimeout > 0 {
		for _, j := range d.running {
			if idle := now.Sub(j.act.LastActive()); idle > s.cfg.IdleTimeout {
				j.cancel(IdleCause(idle, s.cfg.IdleTimeout))
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
	// With nothing running here and other processes' trials under way,
	// their outcomes are what the driver waits for: poll at every tick.
	// Otherwise (a driver whose network workers have not connected) once
	// a second is enough: network workers' outcomes come back through
	// their runners, not the feed.
	if d.others && !s.o.Worker && (now.Sub(d.lastPoll) >= time.Second || len(d.running) == 0 && d.busy) {
		d.lastPoll = now
		if err := d.pollOthers(ctx); err != nil {
			return err
		}
	}
	return nil
}

// The runner pool: choosing an idle runner for a trial and running it there.

package schedulers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// runnerPool is the dispatcher's runners: the idle ones and the running
// trials.
type runnerPool struct {
	running map[int]*job
	idle    []Runner
	next    int // round-robin position (SyncScheduler)
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
		if d.spent(err) {
			// Other processes stored max_suggestions configurations: this
			// one is not run.
			d.idle = append(d.idle, runner)
			d.trialCount--
			return nil
		}
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
		d.added(t)
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
	if s.o.Devices != nil && s.o.Devices.Size() > 0 && !d.isRemote(runner) {
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
		j.act = trial.NewActivityClock(d.clock.Now)
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
	spec.Progress = s.pruneTrial(ctx, t, spec.Progress, cancel) // prune.go
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
	// The trial's progress is stored as it comes (progress.go), all of it
	// before the outcome.
	pw := newProgressWriter(ctx, s.exp, j.t.ID, s.log)
	spec.Progress = chain(pw.add, spec.Progress)
	if j.act != nil {
		// A report is a sign of life (idle_timeout).
		spec.Progress = chain(func(trial.Progress) { j.act.Touch() }, spec.Progress)
	}
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
	pw.close()
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

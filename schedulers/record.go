// Recording: storing a finished trial's outcome and feeding it to the optimizer.

package schedulers

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// recordState is what was recorded: the best trial so far and the trials
// whose outcome the optimizer has seen.
type recordState struct {
	best *Best
	// observed holds the trials whose outcome the optimizer has seen.
	observed map[int]bool
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
		if s.cfg.RunnerKind() == RunnerPassive {
			// A person runs it: the next bench shows it again and waits.
			s.log.Warn("trial interrupted; the trial waits for its result again when the experiment is resumed", "trial", j.t.ID)
			return nil
		}
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
	if s.failures().retry(out.Status, j.attempt, ctx.Err() != nil) {
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
		if scores, err := s.targets.Scores(out.Status, out.Results); err == nil && !trial.LowFidelity(t.Metadata) {
			if d.best == nil || trial.BetterTrial(scores, t.ID, s.targets.Values(d.best.Values), d.best.TrialID) {
				d.best = &Best{TrialID: t.ID, Values: s.targets.Values(scores)}
			}
		}
	case trial.FAILED, trial.TIMED_OUT:
		own(&s.stats.Failed)
	case trial.CANCELED:
		own(&s.stats.Canceled)
	}
	s.failures().count(&d.failureState, out.Status, out.FailureReason)
	if out.Status != trial.CANCELED {
		sc, _ := s.targets.Scores(out.Status, out.Results)
		d.observeStop(out.Results, sc)
		d.race(it, out, sc)
	}
	s.pruneDone(t.ID) // prune.go
	s.logFinished(t, out)
	d.observed[t.ID] = true
	if d.fidelityRecord(it, t, out) { // fidelity.go: the plan and the optimizer's contract
	} else if out.Status != trial.CANCELED && !s.o.Worker {
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

// Reuse: trials whose configuration and repeat already ran (dedup) and config_id re-runs.

package schedulers

import (
	"context"
	"fmt"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// reuseState is what dedup (reuse of identical trials) knows.
type reuseState struct {
	// waiting maps an unfinished trial to the trials of the same
	// configuration and repeat that wait for its result (dedup).
	waiting map[int][]item
	// noReuse queues the next suggestion to run even when an identical
	// trial exists (config_id re-runs).
	noReuse bool
	// keys holds "config hash|repeat" of every trial of the experiment this
	// process knows of (dedup asks storage only about these).
	keys map[string]bool
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
	d.added(t)
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

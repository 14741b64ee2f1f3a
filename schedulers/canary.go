package schedulers

import (
	"fmt"

	"github.com/benchtune/bench/trial"
)

// The canary: a new experiment's first trial runs alone, before the other
// runners start, and the experiment stops when it fails. A config that is
// broken (a script that is not there, a results file never written, a
// target metric no trial reports) then costs one trial instead of one per
// runner before fail-fast can tell. It is on by default (Config.Canary,
// the "canary" global, --no-canary), only in a driver (not a bench worker)
// that runs more than one trial at once, and only for an experiment with
// no trials yet: a resumed one has run before. Trials run by hand (the
// passive runner) have no canary: no script of the config runs them. Retries of the canary
// (max_retries) run alone too; a trial stopped on request (CANCELED) or
// one that ended without a final status lets the others start.

// limit is how many trials this process runs at once now: one while the
// canary runs, else the scheduler's concurrency.
func (d *dispatch) limit() int {
	if d.canary {
		return min(1, d.s.concurrency())
	}
	return d.s.concurrency()
}

// canaryDone ends the canary with the first trial's final outcome: the
// other runners start after a success; a failure stops the experiment.
func (d *dispatch) canaryDone(out trial.Outcome) error {
	if !d.canary {
		return nil
	}
	d.canary = false
	if out.Status != trial.FAILED && out.Status != trial.TIMED_OUT {
		return nil
	}
	return fmt.Errorf("%w: the experiment's first trial, run alone before the other %d runners start (the canary), ended %s, so the others were not started: %s (fix the config, or give --no-canary, or the global \"canary\": false, to start every runner at once)",
		ErrStopped, d.s.concurrency()-1, out.Status, out.FailureReason)
}

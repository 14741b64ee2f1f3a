package launcher

import (
	"github.com/benchtune/bench/schedulers"
)

// checkFidelity checks the scheduler's fidelity (bench only) against what
// the run's configs define, in provision (so bench validate and bench run
// say the same): a tunable must be numeric with a range that covers
// min..max; any other name must be a parameter that some config has or a
// global (the trial's value overrides it), else it would reach no
// environment.
func (r *Run) checkFidelity(cfg schedulers.Config) error {
	f := cfg.Fidelity
	if !f.On() || len(r.Runners) == 0 {
		return nil
	}
	l := r.Launch
	known := l.Loader.SeenKeys()
	for k := range l.Globals {
		if k != "fidelity" {
			known[k] = true
		}
	}
	err := schedulers.CheckFidelity(f, r.Runners[0].Env.Tunables(), known)
	if err != nil && f.Ref.Node() == nil {
		// Given as a global (a globals file or --fidelity).
		return locateGlobal(l, "fidelity", err)
	}
	return err
}

package launcher

import (
	"errors"
	"strings"

	"fmt"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
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

// noBestProblem is the end-of-run problem of a run without a best trial;
// in a multi-fidelity run whose trials succeeded below full fidelity only,
// it says so (those results are estimates, never the answer).
func noBestProblem(trials []storage.Trial) string {
	low := 0
	full := ""
	for _, t := range trials {
		if v, m, ok := trial.FidelityOf(t.Metadata); ok && v < m && t.Status == trial.SUCCEEDED {
			low++
			full = t.Metadata[trial.FidelityMaxKey]
		}
	}
	if low > 0 {
		return fmt.Sprintf("no trial succeeded at full fidelity (%s), only %d at lower ones: give the search more configurations (max_suggestions) so that some are promoted to the last rung", full, low)
	}
	return "no trial succeeded with numeric values for the optimization targets"
}

// locateFidelityGlobal points a scheduler config error about a fidelity
// given in a globals file at that file's key.
func locateFidelityGlobal(l *configs.Launch, err error) error {
	var se *source.Error
	if err == nil || !errors.As(err, &se) || se.Path != "/fidelity" && !strings.HasPrefix(se.Path, "/fidelity/") {
		return err
	}
	return locateGlobal(l, "fidelity", err)
}

package main

import (
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// The staged refinement (-refine staged, optimizers/bayes/noise_h.go):
// the noise-aware GP searches for N − L − k·M evaluations (L =
// bayes.StagedShare·N); if its search has then settled
// (bayes.Optimizer.SearchSettled: the expected improvement at its next
// point below bayes.StagedSettledFactor noise standard deviations, and a
// model whose noise is not most of the variation), L evaluations of a local design in
// bayes.StagedStages rounds, each around the posterior mean's minimiser
// in the previous round's box, then a confirmation of the last minimiser
// and the best observed point (k = 2, M rounds each, interleaved), the
// answer the candidate with the lowest posterior mean. If the search has
// not settled, the L + k·M evaluations go to the search as well, and the
// answer is the posterior-mean best (the aware method's): equal total
// evaluations either way.

// stagedRefineCfg is the -refine staged setting.
func stagedRefineCfg() refineCfg {
	return refineCfg{frac: bayes.StagedShare, k: 2, radius: bayes.StagedRadius, stages: bayes.StagedStages, staged: true}
}

// stagedRun finishes refineRun for -refine staged after its search
// evaluations: it returns the true values of the reported configuration,
// of the last minimiser (the reported one when the search had not
// settled) and the lowest true value measured.
func stagedRun(o *bayes.Optimizer, rc refineCfg, budget, search int, measure func(tunables.Point) error,
	truth func(tunables.Point) float64, bestTrue func() float64, note func(tunables.Point)) (float64, float64, float64, error) {
	if !o.SearchSettled(bayes.StagedSettledFactor) {
		for range budget - search {
			pts, err := o.Suggest(1, nil)
			if err != nil {
				return 0, 0, 0, err
			}
			if err := measure(pts[0]); err != nil {
				return 0, 0, 0, err
			}
		}
		note(o.Ranked(1)[0]) // noise_b.go (-refine-basins)
		v := truth(o.Ranked(1)[0])
		return v, v, bestTrue(), nil
	}
	if err := stagedNSet(o); err != nil { // noise_n.go
		return 0, 0, 0, err
	}
	l, m := rc.split(budget)
	st, used, err := basinStart(o, rc, l, measure, truth) // noise_b.go: NewStaged unless -refine staged-basin
	if err != nil {
		return 0, 0, 0, err
	}
	for _, n := range bayes.StagedSplit(l-used, bayes.StagedStages) {
		pts, err := st.Design(n)
		if err != nil {
			return 0, 0, 0, err
		}
		for _, x := range pts {
			if err := measure(x); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	center, err := st.Best()
	if err != nil {
		return 0, 0, 0, err
	}
	pick, err := confirmPick(o, center, rc.k, m, budget, measure)
	if err != nil {
		return 0, 0, 0, err
	}
	note(pick)
	return truth(pick), truth(center), bestTrue(), nil
}

// refinePerSeed prints each seed's deployed regret under the -refine
// table (-refine-per-seed).
var refinePerSeed bool

func perSeed(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmtV(x)
	}
	return strings.Join(out, " ")
}

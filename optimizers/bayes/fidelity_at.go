package bayes

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/tunables"
)

// Predictions at any fidelity (multi-fidelity mode, SetFidelity), for a
// scheduler that decides which configuration to continue by the model's
// expected improvement at that configuration's *next* fidelity, over the
// best value at that fidelity (DyHPO, Wistuba et al., NeurIPS 2022),
// rather than at full fidelity (PredictFull).

// PredictAt returns the posterior of each point of xs at its own fidelity
// coordinate (points of the space whose fidelity coordinate is where to
// predict), with its standard deviation (of the latent function, without
// the observation noise), and for each point the incumbent at that
// fidelity on the same scale: the lowest posterior mean at that fidelity
// coordinate over every configuration observed (at any fidelity). It is
// the best value the model expects at that fidelity among the
// configurations it knows: a posterior mean rather than the lowest
// observed value, as log EI's incumbent at full fidelity is (low
// fidelities are noisy, and the minimum of many noisy values is biased
// low), and over every configuration rather than only those observed at
// that fidelity, which at a high fidelity are few (a weak incumbent there
// would make continuing any configuration look promising). Values are on
// the model's scale (PredictFull's: after the output transform and the
// removal of the fidelity's common offset, lower is better). ok is false,
// with nothing predicted, before the model exists (fewer than 2
// successful observations) or without a fidelity.
func (o *Optimizer) PredictAt(xs []tunables.Point) (pred []Prediction, incumbent []float64, ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil {
		return nil, nil, false, nil
	}
	for i, x := range xs {
		if err := o.sp.Check(x); err != nil {
			return nil, nil, false, fmt.Errorf("point %d: %w", i, err)
		}
	}
	if ok, err := o.fidelityModel(); !ok || err != nil {
		return nil, nil, false, err
	}
	g := o.g
	fi := o.fid.i
	incAt := map[float64]float64{}
	pred = make([]Prediction, len(xs))
	incumbent = make([]float64, len(xs))
	for i, x := range xs {
		f := o.encode(o.sp.Snap(slices.Clone(x)))
		mu, v := g.predict(f)
		pred[i] = Prediction{Mean: mu, SD: math.Sqrt(v)}
		c := f[fi]
		inc, seen := incAt[c]
		if !seen {
			inc = math.Inf(1)
			q := make([]float64, g.d)
			for j := range g.n {
				copy(q, g.row(j))
				q[fi] = c
				inc = min(inc, g.mean(q))
			}
			incAt[c] = inc
		}
		incumbent[i] = inc
	}
	return pred, incumbent, true, nil
}

// fidelityModel brings the model up to date for predictions (PredictFull,
// PredictAt), as Suggest would (a hyperparameter refit when one is due);
// false before the model exists (fewer than 2 successful observations).
// The caller holds o.mu and has checked that a fidelity is set.
func (o *Optimizer) fidelityModel() (bool, error) {
	succeeded := 0
	for _, e := range o.hist.Entries() {
		if e.N > 0 {
			succeeded++
		}
	}
	if succeeded < 2 {
		return false, nil
	}
	var lam []float64
	if o.m > 1 {
		lam = make([]float64, o.m)
		for j := range lam {
			lam[j] = 1 / float64(o.m)
		}
	}
	if err := o.prepareModel(o.targets(lam)); err != nil {
		return false, err
	}
	return true, nil
}

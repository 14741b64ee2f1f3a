package bayes

import (
	"math"

	"github.com/benchtune/bench/tunables"
)

// TargetOverride gives, for an observed point x, the value the model
// should learn instead of the observed one and its weight in (0, 1]: the
// number of observations it counts as (its noise variance is the learned
// noise's divided by the weight). ok false keeps the observation as it
// is. It is how a learning-curve extrapolation (optimizers/curve) feeds a
// full-fidelity GP: a configuration stopped early is observed once, and
// its value is the extrapolated final value, with a weight that falls as
// the extrapolation's uncertainty grows; as more of its curve is seen,
// the override changes, without a second observation. It is called under
// the optimizer's lock (it must not call the optimizer) every time the
// model is brought up to date, for every observed point.
type TargetOverride func(x tunables.Point) (y, weight float64, ok bool)

// lceState is the override in use.
type lceState struct {
	f TargetOverride
}

// SetTargetOverride installs f (nil removes it). With an override the
// model is refactorised at every update (the weights of old points can
// change), which costs one Cholesky factorisation per suggestion; the
// hyperparameters are refitted on the usual schedule. Single objective
// only: with several, the override is ignored.
func (o *Optimizer) SetTargetOverride(f TargetOverride) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f == nil {
		o.lce = nil
	} else {
		o.lce = &lceState{f: f}
	}
	o.baseN = -1
}

// lceTargets replaces the raw targets of the points the override covers.
func (o *Optimizer) lceTargets(out []float64) {
	if o.lce == nil || o.m != 1 {
		return
	}
	for i, e := range o.hist.Entries() {
		if e.N == 0 {
			continue
		}
		if y, _, ok := o.lce.f(e.X); ok && !math.IsNaN(y) && !math.IsInf(y, 0) {
			out[i] = y
		}
	}
}

// lceCounts scales the counts of the points the override covers by their
// weights, and marks the model for a rebuild (the weights may have
// changed since it was factorised).
func (o *Optimizer) lceCounts(c []float64) {
	if o.lce == nil || o.m != 1 {
		return
	}
	for i, e := range o.hist.Entries() {
		if e.N == 0 {
			continue
		}
		if y, w, ok := o.lce.f(e.X); ok && !math.IsNaN(y) && !math.IsInf(y, 0) && w > 0 && !math.IsNaN(w) {
			c[i] *= min(w, 1)
		}
	}
	o.baseN = -1
}

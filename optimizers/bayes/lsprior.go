package bayes

import (
	"errors"
	"fmt"
	"math"
)

// SetLengthscalePrior replaces the log-normal prior of every lengthscale
// (inputs in [0,1]) by one with this median and standard deviation of
// the log lengthscale, bounded to [0.01, hi]; the default prior is
// newPriors' (median 0.3·√D, sd 1, bounds [0.01, 10]). An experiment of
// bench/optbench (-ls-prior): nothing in bench calls it. It must be called
// before the first fit, and not with a fidelity input, the sparse prior
// (20 dimensions and up), trust regions, the additive kernel or the
// learning-curve kernel, which have priors of their own.
func (o *Optimizer) SetLengthscalePrior(median, sd, hi float64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if !ok(median) || !ok(sd) || !ok(hi) {
		return fmt.Errorf("lengthscale prior: median %v, sd %v and upper bound %v must be positive and finite", median, sd, hi)
	}
	if hi <= lenLo {
		return fmt.Errorf("lengthscale prior: upper bound %v must be above the lower bound %v", hi, lenLo)
	}
	if o.theta != nil {
		return errors.New("lengthscale prior: set it before the first fit")
	}
	if o.fid != nil || o.pr.sparse || o.tr != nil || o.pr.add || o.pr.ftk != nil {
		return errors.New("lengthscale prior: not with a fidelity input, the sparse prior, trust regions, the additive or the learning-curve kernel")
	}
	mu, lo := math.Log(median), math.Log(lenLo)
	for i := range o.sp.Len() {
		o.pr.mu[i], o.pr.sd[i], o.pr.lo[i], o.pr.hi[i] = mu, sd, lo, math.Log(hi)
	}
	return nil
}

// Lengthscales returns the fitted lengthscales (inputs in [0,1]); false
// before the first fit.
func (o *Optimizer) Lengthscales() ([]float64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.theta == nil {
		return nil, false
	}
	ls := make([]float64, o.sp.Len())
	for i := range ls {
		ls[i] = math.Exp(o.theta[i])
	}
	return ls, true
}

package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The kernel chosen per run by held-out likelihood (bench only, an
// optbench experiment: -noise-kernel loo). The additive kernel
// (additive.go) is the lever of the search on a function that is a sum of
// one-dimensional terms (Levy-10) and a worse local surface on one that is
// not (Hartmann6); the evidence with a BIC penalty (SetAdditiveSelect)
// keeps the plain kernel too often on Levy-10. Here the question is asked
// of the data the run has, as a prediction: both kernels are fitted on
// the observations so far, and each one's leave-one-out log predictive
// density (the GP's closed form, no refit: the predictive of y_i from
// all the other points is N(y_i − α_i/(K⁻¹)_ii, 1/(K⁻¹)_ii)) is summed
// over the measured points that are not rejected as outliers. The kernel
// whose sum is higher by more than a margin is used from then on.

// AdditiveLOO fits the plain Matérn kernel and the additive mixture on the
// observations so far (the targets and noise weights the model uses now)
// and returns the sum over the measured, non-rejected points of each
// one's leave-one-out log predictive density. It changes nothing in the
// optimizer: its starts are drawn from a generator of its own, so that
// asking it leaves the run as it would be without it. ok is false when
// there is no model to compare (fewer than 8 points, several objectives,
// or a combination the additive kernel refuses).
func (o *Optimizer) AdditiveLOO() (plain, additive float64, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.hist.Len()
	if o.m != 1 || n < 8 || n > maxFitPoints || o.fid != nil || o.tr != nil || o.nl != nil || o.pr.ftk != nil || o.pr.sparse {
		return 0, 0, false
	}
	entries := o.hist.Entries()
	xs := make([][]float64, n)
	for i, e := range entries {
		xs[i] = o.encode(e.X)
	}
	cnt := o.counts()
	y := o.targets(nil)
	d := o.sp.Len()
	rng := rand.New(rand.NewPCG(uint64(n), 0x6c6f6f))
	pr := o.noisePriors()
	pp := pr
	pp.add = false
	pp.mu, pp.sd, pp.lo, pp.hi = pr.mu[:d+2], pr.sd[:d+2], pr.lo[:d+2], pr.hi[:d+2]
	pa := addPriors(pp, d)
	var ps []hyper
	if len(o.theta) >= d+2 {
		ps = append(ps, slices.Clone(o.theta[:d+2]))
	} else {
		ps = append(ps, pp.defaultHyper())
	}
	for range 2 {
		ps = append(ps, pp.sample(rng))
	}
	thP, _ := fitHyper(newFitData(xs, cnt, y, o.cat, pp), ps, 60)
	as := []hyper{append(slices.Clone(thP), pa.mu[d+2:]...)}
	if len(o.theta) == 2*d+3 {
		as = append(as, slices.Clone(o.theta))
	}
	as = append(as, pa.sample(rng))
	thA, _ := fitHyper(newFitData(xs, cnt, y, o.cat, pa), as, 60)
	var okP, okA bool
	plain, okP = o.looLogDensity(xs, cnt, y, thP, false)
	additive, okA = o.looLogDensity(xs, cnt, y, thA, true)
	return plain, additive, okP && okA
}

// looLogDensity is the sum of the leave-one-out log predictive densities
// of the measured points not rejected as outliers, of the GP with
// hyperparameters th on (xs, cnt, y).
func (o *Optimizer) looLogDensity(xs [][]float64, cnt, y []float64, th hyper, add bool) (float64, bool) {
	g := newGPAdd(o.cat, th, add)
	if err := g.setData(xs, cnt, y); err != nil {
		return 0, false
	}
	n := len(xs)
	col := make([]float64, n)
	s := 0.0
	for i, e := range o.hist.Entries() {
		if e.N == 0 {
			continue
		}
		if _, rejected := o.outl[e.Key]; rejected {
			continue
		}
		clear(col)
		col[i] = 1
		g.solveL(n, col)
		kii := 0.0
		for _, v := range col {
			kii += v * v
		}
		if kii <= 0 {
			return 0, false
		}
		s += -0.5*math.Log(2*math.Pi/kii) - 0.5*g.alpha[i]*g.alpha[i]/kii
	}
	return s, true
}

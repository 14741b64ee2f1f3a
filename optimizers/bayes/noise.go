package bayes

import (
	"math"
	"slices"
	"sort"

	"github.com/benchtune/bench/optimizers/internal/history"
	"github.com/benchtune/bench/tunables"
)

// Noise-aware mode (SetNoise with aware on) changes three things:
//
//   - Heteroscedastic noise from repeats: a point measured c times has
//     noise σ_n²·r_i/c, where r_i is its observed variance relative to the
//     pooled variance of all repeated points, shrunk towards 1 with a
//     prior weight of hetPriorDF degrees of freedom and clamped to
//     [1/hetClamp, hetClamp]; points measured once have r_i = 1.
//   - Augmented expected improvement (Huang et al., 2006, "Global
//     optimization of stochastic black-box systems via sequential kriging
//     meta-models"): the threshold is the posterior mean at the observed
//     point minimizing μ + σ (the "effective best", not the luckiest
//     sample), and EI is multiplied by 1 − σ_n/√(s²(x) + σ_n²), which
//     discourages measuring again where the remaining uncertainty is
//     mostly noise. We chose it over Letham et al.'s Monte-Carlo noisy EI
//     because it costs one GP prediction per candidate (NEI needs tens of
//     posterior samples of the whole training set per suggestion, each a
//     refactorization), keeps the log-EI numerics, and needs no
//     random-number stream that would change the suggestions of a seed.
//   - The noise prior is empirical when repeats exist: the log noise
//     variance has its prior centred on the repeats' pooled variance in the
//     model's units (divided by the variance of the points' values; the
//     output warping is ignored), with a standard deviation of 0.5 instead
//     of the vague default, so that the noise the model uses (and shows)
//     is the one the repeats measured, not the prior's mode.
//   - The reported best is the observed point with the lowest posterior
//     mean (Ranked), not the lowest observation.
const (
	hetPriorDF  = 4.0
	hetClamp    = 10.0
	aeiEffConst = 1.0 // c in μ + c·σ for the effective best
)

// SetNoise sets how repeated measurements of a point are aggregated (nil:
// the mean) and turns the noise-aware mode on or off. Call it before the
// first observation.
func (o *Optimizer) SetNoise(agg history.Aggregator, aware bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hist.SetAggregator(agg)
	o.aware = aware
	o.nlSyncTR()
	o.baseN = -1
	o.theta = nil
	o.outl = nil
}

// hetFactors returns r_i per history entry (1 for all when the mode is
// off, with several objectives, or without repeated points).
func (o *Optimizer) hetFactors() []float64 {
	entries := o.hist.Entries()
	r := make([]float64, len(entries))
	for i := range r {
		r[i] = 1
	}
	if !o.aware || o.m != 1 {
		return r
	}
	pooled, dof := 0.0, 0.0
	for _, e := range entries {
		if e.N >= 2 {
			pooled += e.Var(0) * float64(e.N-1)
			dof += float64(e.N - 1)
		}
	}
	if dof == 0 || pooled <= 0 {
		return r
	}
	pooled /= dof
	for i, e := range entries {
		if e.N < 2 {
			continue
		}
		k := float64(e.N - 1)
		v := (hetPriorDF*pooled + k*e.Var(0)) / (hetPriorDF + k)
		r[i] = min(hetClamp, max(1/hetClamp, v/pooled))
	}
	return r
}

// aeiThreshold is the posterior mean at the effective best: the training
// point (among the 20 with the lowest mean) minimizing μ + c·σ.
func aeiThreshold(g *gp) float64 {
	n := g.n
	idx := make([]int, n)
	mu := make([]float64, n)
	for i := range n {
		idx[i] = i
		mu[i] = g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return mu[idx[a]] < mu[idx[b]] })
	best, bestU := math.Inf(1), math.Inf(1)
	for _, i := range idx[:min(20, n)] {
		_, v := g.predict(slices.Clone(g.row(i)))
		if u := mu[i] + aeiEffConst*math.Sqrt(v); u < bestU {
			best, bestU = mu[i], u
		}
	}
	return best
}

// aeiPenalty returns log(1 − √(σ_n²/(v+σ_n²))) and its derivative with
// respect to v.
func aeiPenalty(v, noise float64) (f, dfdv float64) {
	if noise <= 0 {
		return 0, 0
	}
	q := math.Sqrt(noise / (v + noise))
	if q >= 1 {
		q = 1 - 1e-12
	}
	return math.Log1p(-q), 0.5 * q / ((v + noise) * (1 - q))
}

// Ranked returns up to k observed points, best first by the model's
// posterior mean (by their aggregated values before the model exists or
// with several objectives).
func (o *Optimizer) Ranked(k int) []tunables.Point {
	o.mu.Lock()
	defer o.mu.Unlock()
	entries := o.hist.Entries()
	idx := make([]int, 0, len(entries))
	key := make([]float64, len(entries))
	for i, e := range entries {
		if e.N > 0 {
			idx = append(idx, i)
			key[i] = e.Mean()[0]
		}
	}
	if o.m == 1 && len(idx) >= 2 {
		if err := o.prepareModel(o.targets(nil)); err == nil {
			for _, i := range idx {
				key[i] = o.g.y[i] - (o.g.nv[i]+o.g.jitter)*o.g.alpha[i]
			}
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return key[idx[a]] < key[idx[b]] })
	var out []tunables.Point
	for _, i := range idx[:min(k, len(idx))] {
		out = append(out, slices.Clone(entries[i].X))
	}
	return out
}

// NoiseLevel returns the model's learned noise standard deviation as a
// fraction of the standard deviation of the observed values (the targets
// are standardized; with the output warping this is approximate), and
// the signal-to-noise ratio σ_f/σ_n; ok is false before the first fit.
func (o *Optimizer) NoiseLevel() (rel, snr float64, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.theta == nil {
		return 0, 0, false
	}
	d := o.sp.Len()
	sig2, noise := math.Exp(o.theta[d]), math.Exp(o.theta[d+1])
	return math.Sqrt(noise), math.Sqrt(sig2 / noise), true
}

// noisePriors returns the hyperparameter priors, with the empirical noise
// prior in noise-aware mode when repeats measured the noise.
func (o *Optimizer) noisePriors() priors {
	v, ok := o.repeatNoise()
	if !o.aware || !ok {
		return o.pr
	}
	d := o.sp.Len()
	p := priors{mu: slices.Clone(o.pr.mu), sd: slices.Clone(o.pr.sd), lo: o.pr.lo, hi: o.pr.hi, add: o.pr.add}
	p.mu[d+1] = min(max(math.Log(v), p.lo[d+1]), p.hi[d+1])
	p.sd[d+1] = 0.5
	return p
}

// repeatNoise is the pooled variance of the repeats of the only objective
// over the variance of the points' values (false without repeats).
func (o *Optimizer) repeatNoise() (float64, bool) {
	if o.m != 1 {
		return 0, false
	}
	pooled, dof := 0.0, 0.0
	var means []float64
	for _, e := range o.hist.Entries() {
		if e.N == 0 {
			continue
		}
		means = append(means, e.Sum[0]/float64(e.N))
		if e.N >= 2 {
			pooled += e.Var(0) * float64(e.N-1)
			dof += float64(e.N - 1)
		}
	}
	if dof < 2 || len(means) < 3 {
		return 0, false
	}
	mu, ss := 0.0, 0.0
	for _, m := range means {
		mu += m
	}
	mu /= float64(len(means))
	for _, m := range means {
		ss += (m - mu) * (m - mu)
	}
	total := ss / float64(len(means)-1)
	if total <= 0 || pooled <= 0 {
		return 0, false
	}
	return pooled / dof / total, true
}

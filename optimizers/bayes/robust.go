package bayes

import (
	"maps"
	"math"
	"sort"
)

// Outliers in noise-aware mode. A heavy-tailed measurement (a benchmark
// run disturbed by another process, a lucky cache hit) is far more
// likely than the Gaussian noise model admits, and one lucky outlier
// drags the posterior mean down around it: the model then reports it as
// the best configuration and searches around it. After each
// hyperparameter fit, every measured point gets its leave-one-out
// standardized residual
//
//	z_i = (y_i − μ₋ᵢ)/√(s²₋ᵢ + σ²_n,i),   μ₋ᵢ = y_i − α_i/(K⁻¹)_ii,  s²₋ᵢ + σ²_eff,i = 1/(K⁻¹)_ii
//
// (the GP's closed form, no refit; σ²_n,i its noise without the outlier
// factor). Points with |z_i| above robustZ, at most one in twenty, the
// largest first, are rejected: their noise variance is multiplied by
// robustF, so that the model all but ignores them, and the
// hyperparameters are fitted again without their pull (fitted with an
// outlier, they explain it as signal). The test is repeated at every fit,
// so a point whose residual falls back below the threshold as data
// accumulates is taken in again. Under Gaussian noise |z| > 4 happens once
// in about 16,000 points.
const (
	robustZ     = 4.0
	robustIters = 3
	robustMaxN  = 400 // larger models keep the rejections of the last fit
	robustF     = 1e8
)

// downweightOutliers updates o.outl from the model with hyperparameters
// o.theta on features xs and targets y, and reports whether it changed.
func (o *Optimizer) downweightOutliers(xs [][]float64, y []float64) (bool, error) {
	entries := o.hist.Entries()
	n := len(entries)
	if n > robustMaxN || n < 8 {
		return false, nil
	}
	before := maps.Clone(o.outl)
	col := make([]float64, n)
	type res struct {
		key string
		z   float64
	}
	for range robustIters {
		cnt := o.counts()
		g := newGPAdd(o.cat, o.theta, o.pr.add)
		if err := g.setData(xs, cnt, y); err != nil {
			return false, err
		}
		var big []res
		for i, e := range entries {
			if e.N == 0 {
				continue
			}
			for j := range col {
				col[j] = 0
			}
			col[i] = 1
			g.solveL(n, col)
			kii := 0.0
			for _, v := range col {
				kii += v * v
			}
			base := g.nv[i]
			if _, ok := o.outl[e.Key]; ok {
				base /= robustF
			}
			s2 := max(1/kii-g.nv[i]-g.jitter, 0)
			z := math.Abs(g.alpha[i]/kii) / math.Sqrt(s2+base+g.jitter)
			if z > robustZ {
				big = append(big, res{e.Key, z})
			}
		}
		sort.Slice(big, func(a, b int) bool { return big[a].z > big[b].z })
		next := map[string]float64{}
		for _, r := range big[:min(len(big), max(1, n/20))] {
			next[r.key] = robustF
		}
		if maps.Equal(next, o.outl) || (len(next) == 0 && len(o.outl) == 0) {
			break
		}
		o.outl = next
	}
	return !maps.Equal(before, o.outl) && !(len(before) == 0 && len(o.outl) == 0), nil
}

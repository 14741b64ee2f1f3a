package bayes

import (
	"errors"
	"math"
	"slices"
	"sort"

	"github.com/benchtune/bench/tunables"
)

// Local refinement (noise-aware mode's end game): after the search, the
// budget left is spent where noise is beaten by averaging. A space-filling
// local design (LocalDesign) is measured in a box around the posterior-mean
// incumbent; the GP, fitted on everything, then acts as a local response
// surface whose minimiser (MeanMinimizer) averages the noise of all the
// nearby measurements instead of trusting any single one; that minimiser
// is what the confirmation re-runs. The box's half-width along a numeric
// dimension is radius·ℓ_i (ℓ_i the fitted lengthscale in the unit box,
// capped at 0.5): wide along dimensions that barely matter, narrow along
// those that do, so that the design sees the curvature of the basin
// rather than only noise.

// Tuning constants of MeanMinimizer's search.
const (
	refineCandidates = 1024 // quasi-random points of the box
	refineStarts     = 3    // local searches from the best of them
	refinePerScale   = 48   // perturbations per step size
)

var errRefineModel = errors.New("local refinement needs the model: a single objective and at least two observations")

// refineBox returns the box around center: its lower and upper corners
// (equal to center on dimensions that do not move: categorical, inactive,
// the fidelity).
func (o *Optimizer) refineBox(center tunables.Point, radius float64) (lo, hi []float64, err error) {
	if o.m != 1 || o.hist.Len() < 2 {
		return nil, nil, errRefineModel
	}
	if err := o.sp.Check(center); err != nil {
		return nil, nil, err
	}
	center = o.sp.Snap(center)
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return nil, nil, err
	}
	if o.theta == nil {
		return nil, nil, errRefineModel
	}
	lo, hi = center, slices.Clone(center)
	for i, dm := range o.sp.Dims() {
		if dm.Kind != tunables.DimNumeric || !o.sp.Active(center, i) || o.isFidelity(i) {
			continue
		}
		h := min(0.5, radius*math.Exp(o.theta[i]))
		lo[i], hi[i] = max(0, center[i]-h), min(1, center[i]+h)
	}
	return lo, hi, nil
}

// LocalDesign returns n points spread over the box around center whose
// half-width along numeric dimension i is radius·ℓ_i (a scrambled Halton
// sample, as trust regions use; see above). Other coordinates keep
// center's values. It needs the model (a single objective, two
// observations at least).
func (o *Optimizer) LocalDesign(center tunables.Point, n int, radius float64) ([]tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n <= 0 {
		return nil, nil
	}
	lo, hi, err := o.refineBox(center, radius)
	if err != nil {
		return nil, err
	}
	d := o.sp.Len()
	qmc := o.quasiRandom(n, d)
	out := make([]tunables.Point, 0, n)
	for c := range n {
		q := slices.Clone(lo)
		for i := range d {
			q[i] += qmc[c*d+i] * (hi[i] - lo[i])
		}
		o.sp.SnapInPlace(q)
		out = append(out, o.pin(q))
	}
	return out, nil
}

// MeanMinimizer returns the point of the box around center (as in
// LocalDesign, radius) that minimizes the posterior mean plus kappa
// posterior standard deviations (kappa = 0: the mean; kappa > 0 leans
// towards where the model has measured, so that a dip the data do not
// support is not chosen): the best of quasi-random points of the box and
// the observed points in it, improved by local random search with
// shrinking steps. With local, the model is a GP of its own fitted on the
// observations near the box only (within twice its half-widths, at least
// the 2·D+2 nearest), on standardized values without the output warping:
// a local response surface, whose lengthscales and noise describe the
// basin rather than the whole space.
func (o *Optimizer) MeanMinimizer(center tunables.Point, radius, kappa float64, local bool) (tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	lo, hi, err := o.refineBox(center, radius)
	if err != nil {
		return nil, err
	}
	g := o.g
	if local {
		if g, err = o.localGP(center, lo, hi); err != nil {
			return nil, err
		}
	}
	score := func(p tunables.Point) float64 {
		mu, v := g.predict(o.encode(p))
		return mu + kappa*math.Sqrt(v)
	}
	d := o.sp.Len()
	inBox := func(p tunables.Point) bool {
		for i := range d {
			if p[i] < lo[i]-1e-12 || p[i] > hi[i]+1e-12 {
				return false
			}
		}
		return true
	}
	var cands []cand
	cands = append(cands, cand{slices.Clone(center), score(center)})
	for _, e := range o.hist.Entries() {
		if e.N > 0 && inBox(e.X) {
			cands = append(cands, cand{slices.Clone(e.X), score(e.X)})
		}
	}
	qmc := o.quasiRandom(refineCandidates, d)
	for c := range refineCandidates {
		q := slices.Clone(lo)
		for i := range d {
			q[i] += qmc[c*d+i] * (hi[i] - lo[i])
		}
		o.sp.SnapInPlace(q)
		q = o.pin(q)
		cands = append(cands, cand{q, score(q)})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].f < cands[b].f })
	best := cands[0]
	for _, c := range cands[:min(refineStarts, len(cands))] {
		p, f := c.p, c.f
		for _, s := range []float64{0.3, 0.1, 0.03, 0.01} {
			for range refinePerScale {
				q := slices.Clone(p)
				for i := range d {
					if w := hi[i] - lo[i]; w > 0 {
						q[i] = min(hi[i], max(lo[i], q[i]+s*w*o.rng.NormFloat64()))
					}
				}
				o.sp.SnapInPlace(q)
				q = o.pin(q)
				if fq := score(q); fq < f {
					p, f = q, fq
				}
			}
		}
		if f < best.f {
			best = cand{p, f}
		}
	}
	return best.p, nil
}

// localGP fits a GP on the observations near the box [lo, hi] around
// center (see MeanMinimizer).
func (o *Optimizer) localGP(center tunables.Point, lo, hi []float64) (*gp, error) {
	entries := o.hist.Entries()
	cnt := o.counts()
	raw := o.rawTargets(nil)
	d := o.sp.Len()
	var keep []int
	for i, e := range entries {
		if e.N == 0 {
			continue
		}
		near := true
		for j := range d {
			if w := hi[j] - lo[j]; e.X[j] < lo[j]-w/2-1e-12 || e.X[j] > hi[j]+w/2+1e-12 {
				near = false
				break
			}
		}
		if near {
			keep = append(keep, i)
		}
	}
	if minPts := 2*d + 2; len(keep) < minPts {
		xs := make([][]float64, len(entries)+1)
		for i, e := range entries {
			xs[i] = o.encode(e.X)
		}
		xs[len(entries)] = o.encode(center)
		keep = keep[:0]
		for _, i := range nearest(xs, len(entries), minPts+1) {
			if i < len(entries) && entries[i].N > 0 {
				keep = append(keep, i)
			}
		}
	}
	xs := make([][]float64, len(keep))
	c := make([]float64, len(keep))
	y := make([]float64, len(keep))
	for k, i := range keep {
		xs[k], c[k], y[k] = o.encode(entries[i].X), cnt[i], raw[i]
	}
	y = standardize(y)
	pr := o.noisePriors().dense()
	starts := []hyper{pr.defaultHyper()}
	for range 4 {
		starts = append(starts, pr.sample(o.rng))
	}
	th, _ := fitHyper(newFitData(xs, c, y, o.cat, pr), starts, 60)
	g := newGPAdd(o.cat, th, pr.add)
	if err := g.setData(xs, c, y); err != nil {
		return nil, err
	}
	return g, nil
}

package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/benchtune/bench/tunables"
)

// The basin check (bench only; optbench -refine staged-basin, an
// experiment): before the staged refinement (noise_h.go) spends the end
// of the budget around the posterior-mean incumbent, the posterior mean
// is minimised from many starts over the whole space (Basins); distinct
// local minima are basins. A basin other than the incumbent's whose
// predicted value is within the uncertainty of the incumbent's gets a few
// evaluations (a small local design around its minimiser), and the staged
// rounds then start from whichever basin's minimiser the model predicts
// lower. It is aimed at Hartmann6, where a noise-aware search (and the
// noise-free GP on the same seeds) ends in another basin on some seeds,
// and no refinement of the incumbent's basin can move it out.

// Basin is a local minimum of the posterior mean: its location, and the
// posterior mean and standard deviation there (in the model's
// standardized, possibly warped, units).
type Basin struct {
	X        tunables.Point
	Mean, SD float64
}

// Tuning constants of Basins.
const (
	basinRandomStarts = 32 // quasi-random starts besides the observed ones
	basinObsStarts    = 16 // the best observed points (posterior mean) as starts
	basinPerScale     = 24 // perturbations per step size of the descent
	basinSegment      = 12 // points on the segment of the barrier test
	// basinBarrier: two minima are one basin unless the posterior mean on
	// the segment between them rises above the higher of the two by more
	// than this many noise standard deviations (at least basinMinBarrier
	// in standardized units, for models with almost no noise).
	basinBarrier    = 0.5
	basinMinBarrier = 0.05
)

// Basins returns the distinct local minima of the posterior mean, lowest
// mean first: each of the basinObsStarts best observed points (by
// posterior mean) and basinRandomStarts quasi-random points of the box is
// improved by a random descent with shrinking steps (proportional to the
// fitted lengthscales), and two minima are one basin when the posterior
// mean on the straight segment between them stays below the higher of the
// two plus a barrier (basinBarrier noise standard deviations). It needs
// the model (a single objective, two observations at least); it draws
// from a generator of its own, so that asking does not change what the
// optimizer suggests next.
func (o *Optimizer) Basins() ([]Basin, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return nil, errRefineModel
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return nil, err
	}
	if o.g == nil || o.theta == nil {
		return nil, errRefineModel
	}
	defer o.ownRNG(0x626173696e73)()
	g := o.g
	d := o.sp.Len()
	step := make([]float64, d) // 0 where the coordinate does not move
	for i, dm := range o.sp.Dims() {
		if dm.Kind == tunables.DimNumeric && !o.isFidelity(i) {
			step[i] = min(0.5, math.Exp(o.theta[i]))
		}
	}
	mean := func(p tunables.Point) float64 {
		mu, _ := g.predict(o.encode(p))
		return mu
	}
	var starts []tunables.Point
	entries := o.hist.Entries()
	idx := make([]int, 0, len(entries))
	for i, e := range entries {
		if e.N > 0 {
			idx = append(idx, i)
		}
	}
	key := func(i int) float64 { return g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i] }
	sort.SliceStable(idx, func(a, b int) bool { return key(idx[a]) < key(idx[b]) })
	for _, i := range idx[:min(basinObsStarts, len(idx))] {
		starts = append(starts, slices.Clone(entries[i].X))
	}
	qmc := o.quasiRandom(basinRandomStarts, d)
	for c := range basinRandomStarts {
		q := make(tunables.Point, d)
		copy(q, qmc[c*d:(c+1)*d])
		if len(starts) > 0 { // categorical and inactive coordinates from the incumbent
			for i := range d {
				if step[i] == 0 {
					q[i] = starts[0][i]
				}
			}
		}
		o.sp.SnapInPlace(q)
		starts = append(starts, o.pin(q))
	}
	var mins []Basin
	for _, p := range starts {
		p = o.pin(o.sp.Snap(p))
		f := mean(p)
		for _, s := range []float64{1, 0.3, 0.1, 0.03, 0.01} {
			for range basinPerScale {
				q := slices.Clone(p)
				for i := range d {
					if step[i] > 0 {
						q[i] = min(1, max(0, q[i]+s*step[i]*o.rng.NormFloat64()))
					}
				}
				o.sp.SnapInPlace(q)
				q = o.pin(q)
				if fq := mean(q); fq < f {
					p, f = q, fq
				}
			}
		}
		mins = append(mins, Basin{X: p, Mean: f})
	}
	sort.SliceStable(mins, func(a, b int) bool { return mins[a].Mean < mins[b].Mean })
	barrier := max(basinMinBarrier, basinBarrier*math.Sqrt(max(0, g.noise)))
	var out []Basin
	for _, m := range mins {
		same := false
		for _, b := range out {
			if o.oneBasin(mean, b, m, barrier) {
				same = true
				break
			}
		}
		if !same {
			_, v := g.predict(o.encode(m.X))
			m.SD = math.Sqrt(max(0, v))
			out = append(out, m)
		}
	}
	return out, nil
}

// oneBasin reports whether the posterior mean on the segment from a to b
// stays below the higher of the two minima plus barrier.
func (o *Optimizer) oneBasin(mean func(tunables.Point) float64, a, b Basin, barrier float64) bool {
	top := max(a.Mean, b.Mean) + barrier
	for k := 1; k < basinSegment; k++ {
		t := float64(k) / basinSegment
		q := make(tunables.Point, len(a.X))
		for i := range q {
			q[i] = a.X[i] + t*(b.X[i]-a.X[i])
		}
		if mean(q) > top {
			return false
		}
	}
	return true
}

// MeanAt returns the posterior mean and standard deviation at p, in the
// model's units (as Basin's). It needs the model.
func (o *Optimizer) MeanAt(p tunables.Point) (mu, sd float64, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return 0, 0, errRefineModel
	}
	if err := o.sp.Check(p); err != nil {
		return 0, 0, err
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return 0, 0, err
	}
	if o.g == nil {
		return 0, 0, errRefineModel
	}
	mu, v := o.g.predict(o.encode(o.sp.Snap(p)))
	return mu, math.Sqrt(max(0, v)), nil
}

// NewStagedAt starts a staged refinement around center instead of the
// posterior-mean incumbent (NewStaged): the basin the basin check chose.
func (o *Optimizer) NewStagedAt(center tunables.Point) (*Staged, error) {
	if err := o.sp.Check(center); err != nil {
		return nil, err
	}
	return &Staged{o: o, center: o.sp.Snap(center), radius: StagedRadius}, nil
}

// IncumbentBasin returns the minimiser of the posterior mean in the box
// the staged refinement starts in (StagedRadius lengthscales around the
// posterior-mean incumbent), with the posterior mean and standard
// deviation there. It draws from a generator of its own, so that asking
// changes neither the next suggestion nor a staged refinement that
// follows.
func (o *Optimizer) IncumbentBasin() (tunables.Point, float64, float64, error) {
	top := o.Ranked(1)
	if len(top) == 0 {
		return nil, 0, 0, errRefineModel
	}
	o.mu.Lock()
	saved := o.rng
	o.rng = rand.New(rand.NewPCG(uint64(o.hist.Len()), 0x696e63626173))
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.rng = saved
		o.mu.Unlock()
	}()
	m, err := o.MeanMinimizer(top[0], StagedRadius, 0, false)
	if err != nil {
		return nil, 0, 0, err
	}
	mu, sd, err := o.MeanAt(m)
	return m, mu, sd, err
}

// BasinDistance returns the distance from a to b in units of the fitted
// lengthscales (each capped at 0.5 of the unit box, as the refinement's
// boxes are), over the numeric dimensions. It needs the model.
func (o *Optimizer) BasinDistance(a, b tunables.Point) (float64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return 0, errRefineModel
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return 0, err
	}
	if o.theta == nil {
		return 0, errRefineModel
	}
	return o.basinDist(a, b), nil
}

// basinDist is BasinDistance with the lock held and the model fitted.
func (o *Optimizer) basinDist(a, b tunables.Point) float64 {
	s := 0.0
	for i, dm := range o.sp.Dims() {
		if dm.Kind != tunables.DimNumeric || o.isFidelity(i) || i >= len(a) || i >= len(b) {
			continue
		}
		w := min(0.5, math.Exp(o.theta[i]))
		s += (b[i] - a[i]) * (b[i] - a[i]) / (w * w)
	}
	return math.Sqrt(s)
}

// Tuning constants of ExploreOutside.
const (
	exploreCandidates = 2048
	exploreStarts     = 4
)

// ExploreOutside returns the point farther than radius lengthscales
// (BasinDistance) from center with the highest expected improvement over
// the threshold thr (in the model's units: the incumbent basin's
// posterior mean, IncumbentBasin): where another basin could beat the
// incumbent's. Quasi-random points of the whole box, the best of them
// improved by a random local search that stays outside; nil when no
// candidate is outside. It draws from a generator of its own.
func (o *Optimizer) ExploreOutside(center tunables.Point, radius, thr float64) (tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return nil, errRefineModel
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return nil, err
	}
	if o.g == nil || o.theta == nil {
		return nil, errRefineModel
	}
	defer o.ownRNG(0x6578706c6f7265)()
	g := o.g
	d := o.sp.Len()
	score := func(p tunables.Point) float64 {
		if o.basinDist(center, p) <= radius {
			return math.Inf(-1)
		}
		mu, v := g.predict(o.encode(p))
		if v <= 0 {
			return math.Inf(-1)
		}
		return logEI(thr, mu, v)
	}
	var cands []cand
	qmc := o.quasiRandom(exploreCandidates, d)
	for c := range exploreCandidates {
		q := slices.Clone(center)
		for i, dm := range o.sp.Dims() {
			if dm.Kind == tunables.DimNumeric && !o.isFidelity(i) {
				q[i] = qmc[c*d+i]
			}
		}
		o.sp.SnapInPlace(q)
		q = o.pin(q)
		if f := score(q); !math.IsInf(f, -1) {
			cands = append(cands, cand{q, f})
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].f > cands[b].f })
	best := cands[0]
	for _, c := range cands[:min(exploreStarts, len(cands))] {
		p, f := c.p, c.f
		for _, s := range []float64{0.1, 0.03, 0.01} {
			for range basinPerScale {
				q := slices.Clone(p)
				for i, dm := range o.sp.Dims() {
					if dm.Kind == tunables.DimNumeric && !o.isFidelity(i) {
						q[i] = min(1, max(0, q[i]+s*o.rng.NormFloat64()))
					}
				}
				o.sp.SnapInPlace(q)
				q = o.pin(q)
				if fq := score(q); fq > f {
					p, f = q, fq
				}
			}
		}
		if f > best.f {
			best = cand{p, f}
		}
	}
	return best.p, nil
}

// Tuning constants of ThompsonPoint.
const (
	tsRandomCandidates = 2048
	tsAnchors          = 8
	tsPerAnchor        = 128
)

// ThompsonPoint returns the minimiser of one posterior sample of the
// latent function (thompson.go's pathwise sample) over quasi-random
// points of the whole box and perturbations of the tsAnchors best
// observed points (posterior mean): a point chosen with the probability
// that it is the minimum, across basins, rather than by expected
// improvement. Numeric spaces only (nil otherwise); it draws from a
// generator of its own (seeded by the number of observations).
func (o *Optimizer) ThompsonPoint() (tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return nil, errRefineModel
	}
	if !o.numericOnly() {
		return nil, nil
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return nil, err
	}
	if o.g == nil {
		return nil, errRefineModel
	}
	defer o.ownRNG(0x74686f6d70)()
	d := o.sp.Len()
	var pts []tunables.Point
	qmc := o.quasiRandom(tsRandomCandidates, d)
	for c := range tsRandomCandidates {
		q := make(tunables.Point, d)
		copy(q, qmc[c*d:(c+1)*d])
		o.sp.SnapInPlace(q)
		pts = append(pts, o.pin(q))
	}
	for _, an := range o.anchors(o.g)[:min(tsAnchors, len(o.anchors(o.g)))] {
		for j := range tsPerAnchor {
			pts = append(pts, o.perturb(an, []float64{0.01, 0.03, 0.1, 0.3}[j%4]))
		}
	}
	xs := make([][]float64, len(pts))
	for i, p := range pts {
		xs[i] = o.encode(p)
	}
	s := o.g.thompsonSample(xs, o.rng)
	best := 0
	for i, v := range s {
		if v < s[best] {
			best = i
		}
	}
	return slices.Clone(pts[best]), nil
}

package bayes

import (
	"math"
	"slices"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// A local search for noisy benchmarks (SetNoiseLocal, bench-only, off by
// default; noise-aware mode only). Under noise the global GP finds the
// basin of the optimum but not its bottom: its expected improvement keeps
// spreading measurements over the whole box, and near the optimum the
// differences between configurations are of the size of one
// measurement's noise, so a few scattered points there cannot be told
// apart. Once the global search has nothing left to find above the noise
// (the expected improvement at the point it would measure next is below
// nlEIFactor noise standard deviations; and not before nlStartFrac of the
// budget), the suggestion comes from a trust region, a box around the
// configuration with the lowest posterior mean (never the luckiest
// observation), so that the bottom of the basin gets many nearby
// measurements that a model can average. The test is made at every
// suggestion: where the global model expects more again, the global
// search measures. Without it (the region from 40% of the budget on,
// always) Levy-10 got worse: its global search is far from done there.
//
//   - the region is a box of side L·w_i around the posterior-mean
//     incumbent of the global model, w_i the local model's lengthscales
//     over their geometric mean (TuRBO's shape, trust.go);
//   - the local model is a GP fitted on the measurements within twice the
//     region (at least nlMinPoints of them, the nearest), on their
//     standardized values, with its own hyperparameters and a learned
//     noise (the outliers rejected by the global model stay rejected);
//   - each suggestion minimizes a Thompson sample of the local GP over
//     quasi-random candidates in the region (as TuRBO-1);
//   - success and failure are counted on posterior means, not on raw
//     observations (a lucky draw would count as a success and move the
//     region): a round is a success when a configuration measured since
//     the previous round became the posterior-mean incumbent. L doubles
//     after nlSuccTol successes in a row, halves after max(4, D)/q
//     failures, within [nlMinLength, nlMaxLength]. A region at its
//     smallest side is not restarted (TuRBO restarts a collapsed region):
//     there, under noise, the measurements around the incumbent are what
//     the model averages to locate the bottom.
//
// It applies to numeric spaces with one objective below the trust
// region's dimensions (trust.go handles 20 dimensions and up).
var (
	nlStartFrac   = 0.4 // share of MaxTrials searched globally first
	nlStartPerDim = 5   // without MaxTrials: the design plus 5·D points
	nlInitLength  = 0.4
	nlMinLength   = 0.1
	nlMaxLength   = 0.8
	nlSuccTol     = 3
	nlCandidates  = 1000
	// nlEIFactor: the local search takes a suggestion only when the
	// global search expects less than nlEIFactor·σ_n of improvement (0:
	// always, after nlStartFrac of the budget).
	nlEIFactor = 1.0
)

// nlMinPoints is the least number of measurements the local GP is fitted
// on in d dimensions.
func nlMinPoints(d int) int { return max(10, 2*d+2) }

type noiseLocal struct {
	length     float64
	succ, fail int
	seen       int   // history entries at the previous round (-1: none yet)
	theta      hyper // the local GP's hyperparameters (nil before the first fit)
}

// SetNoiseLocal turns the local search of noise-aware mode on or off
// (bench-only; see the top of noiselocal.go). It only acts in
// noise-aware mode (SetNoise with aware on). Call it before the first
// observation.
func (o *Optimizer) SetNoiseLocal(on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nl = nil
	if on {
		o.nl = &noiseLocal{length: nlInitLength, seen: -1}
	}
	o.nlSyncTR() // SetNoiseLocalTRDims: trust.go's regions (noise_ltr.go)
}

// nlStart is the number of observations before the local search starts.
func (o *Optimizer) nlStart() int {
	if o.opts.MaxTrials > 0 {
		return max(o.nInit+2, int(math.Round(nlStartFrac*float64(o.opts.MaxTrials))))
	}
	return o.nInit + nlStartPerDim*o.sp.Len()
}

// nlActive reports whether the local search may take the next
// suggestions (nlLocalTurn decides whether it does).
func (o *Optimizer) nlActive() bool {
	return o.nl != nil && o.aware && o.m == 1 && o.tr == nil && o.fid == nil &&
		o.numericOnly() && o.enumerate() == nil && o.hist.Len() >= o.nlStart()
}

// nlLocalTurn reports whether the next suggestions are the local
// search's: when the global search expects less than nlEIFactor noise
// standard deviations of improvement (the expected improvement, against
// augmented EI's effective best, at the point it would measure), i.e. it
// has nothing left to find above the noise. When it returns false the
// global search's acquisition has been maximized twice for the
// suggestion (here and in modelSuggest), the price of the test.
func (o *Optimizer) nlLocalTurn(avoid func(string) bool) bool {
	if nlEIFactor <= 0 {
		return true
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return true
	}
	g := o.g
	p := o.maximizeAcq(g, avoid)
	if p == nil || g.noise <= 0 {
		return true
	}
	mu, v := g.predict(o.encode(p))
	return logEI(aeiThreshold(g), mu, v) < math.Log(nlEIFactor*math.Sqrt(g.noise))
}

// round counts a round: a success when the posterior-mean incumbent
// (history index inc) was measured since the previous round, of q new
// configurations. It resizes the region.
func (t *noiseLocal) round(inc, n, d int) {
	if t.seen < 0 {
		t.seen = n
		return
	}
	q := n - t.seen
	if q <= 0 {
		return // nothing new measured (pending points only)
	}
	if inc >= t.seen {
		t.succ++
		t.fail = 0
	} else {
		t.fail++
		t.succ = 0
	}
	t.seen = n
	failTol := (max(4, d) + q - 1) / q
	switch {
	case t.succ >= nlSuccTol:
		t.length = min(2*t.length, nlMaxLength)
		t.succ = 0
	case t.fail >= failTol:
		t.length = max(t.length/2, nlMinLength)
		t.fail = 0
	}
}

// nlSuggest fills out up to k points from the local search.
func (o *Optimizer) nlSuggest(k int, pend []tunables.Point, avoid func(string) bool, choose func(tunables.Point), out *[]tunables.Point) error {
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return err
	}
	t := o.nl
	entries := o.hist.Entries()
	gg := o.g
	inc, incMu := -1, math.Inf(1)
	for i := range min(gg.n, len(entries)) {
		if entries[i].N == 0 {
			continue
		}
		if mu := gg.y[i] - (gg.nv[i]+gg.jitter)*gg.alpha[i]; mu < incMu {
			inc, incMu = i, mu
		}
	}
	if inc < 0 {
		for len(*out) < k {
			p := o.randomFree(avoid)
			if p == nil {
				break
			}
			choose(p)
		}
		return nil
	}
	d := o.sp.Len()
	t.round(inc, len(entries), d)
	center := entries[inc].X

	_, lx, lc, ly := o.nlData(inc)
	pr := o.trPriors()
	starts := []hyper{pr.defaultHyper(), pr.sample(o.rng)}
	if t.theta != nil {
		starts[0] = t.theta
	}
	t.theta, _ = fitHyper(newFitData(lx, lc, ly, o.cat, pr), starts, 60)
	g := newGP(o.cat, t.theta)
	if err := g.setData(lx, lc, ly); err != nil {
		return err
	}
	for _, p := range pend {
		x := o.encode(p)
		mu, _ := g.predict(x)
		g.appendPoint(x, g.noise, mu)
	}

	// Candidates in the region; each point of the batch minimizes its own
	// Thompson sample of the local GP over them.
	half := nlHalfSides(t.theta, o.cat, t.length)
	var pts []tunables.Point
	var cxs [][]float64
	for _, p := range o.nlCandidates(center, half, nlCandidates) {
		if !avoid(space.Key(p)) {
			pts = append(pts, p)
			cxs = append(cxs, o.encode(p))
		}
	}
	if len(pts) == 0 {
		for len(*out) < k {
			p := o.randomFree(avoid)
			if p == nil {
				break
			}
			choose(p)
		}
		return nil
	}
	o.thompsonPick(g.newTSBatch(cxs), pts, k, func(i int) bool { return avoid(space.Key(pts[i])) }, avoid, choose, out)
	return nil
}

// nlHalfSides returns the region's half sides L·w_i/2, w_i the
// lengthscales of th over their geometric mean (trust.go's weights).
func nlHalfSides(th hyper, cat []bool, length float64) []float64 {
	w := trWeights(th, cat)
	for i := range w {
		w[i] *= length / 2
	}
	return w
}

// nlInside reports whether x lies within scale times the region's half
// sides around c.
func nlInside(x, c, half []float64, scale float64) bool {
	for i := range x {
		if math.Abs(x[i]-c[i]) > scale*half[i] {
			return false
		}
	}
	return true
}

// nlCandidates returns n quasi-random points (scrambled Halton) in the box
// of half sides half around center, clipped to the unit box.
func (o *Optimizer) nlCandidates(center tunables.Point, half []float64, n int) []tunables.Point {
	d := len(center)
	qmc := o.quasiRandom(n, d)
	out := make([]tunables.Point, 0, n)
	for c := range n {
		q := slices.Clone(center)
		for i := range d {
			lo, hi := max(0, center[i]-half[i]), min(1, center[i]+half[i])
			q[i] = lo + qmc[c*d+i]*(hi-lo)
		}
		o.sp.SnapInPlace(q)
		out = append(out, q)
	}
	return out
}

// nlData returns the local data around history entry inc: the indices of
// the measurements within twice the region (at least nlMinPoints, the
// nearest), their features, noise divisors and standardized values.
func (o *Optimizer) nlData(inc int) (keep []int, lx [][]float64, lc, ly []float64) {
	t := o.nl
	entries := o.hist.Entries()
	d := o.sp.Len()
	th := t.theta
	if th == nil {
		th = o.theta
	}
	half := nlHalfSides(th, o.cat, t.length)
	xs := make([][]float64, len(entries))
	for i, e := range entries {
		xs[i] = o.encode(e.X)
	}
	for i, e := range entries {
		if e.N > 0 && nlInside(xs[i], xs[inc], half, 2) {
			keep = append(keep, i)
		}
	}
	if len(keep) < nlMinPoints(d) {
		keep = keep[:0]
		for _, i := range nearest(xs, inc, len(xs)) {
			if entries[i].N > 0 {
				keep = append(keep, i)
			}
			if len(keep) >= nlMinPoints(d) {
				break
			}
		}
	}
	slices.Sort(keep)
	cnt := o.counts()
	raw := o.rawTargets(nil)
	lx = make([][]float64, len(keep))
	lc = make([]float64, len(keep))
	ly = make([]float64, len(keep))
	for j, i := range keep {
		lx[j], lc[j], ly[j] = xs[i], cnt[i], raw[i]
	}
	return keep, lx, lc, transformOutputs(ly, false)
}

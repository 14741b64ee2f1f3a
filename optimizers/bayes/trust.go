package bayes

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
	"gonum.org/v1/gonum/stat/samplemv"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// Trust regions for many dimensions (TuRBO-1, Eriksson et al., NeurIPS
// 2019, "Scalable global optimization via local Bayesian optimization"),
// used from TrustRegionMinDims dimensions up (or as Options.TrustRegion
// says). A global GP in 20-100 dimensions spreads its expected
// improvement over a huge, mostly unexplored box and keeps sampling its
// corners; TuRBO keeps the same GP but only looks for the next point in a
// box around the incumbent, whose side grows after successes and shrinks
// after failures. We chose it over SAASBO (a fully Bayesian GP with a
// sparsity prior fitted by Hamiltonian Monte Carlo: minutes per
// suggestion, which breaks the latency target) and over embeddings
// (BAxUS, HeSBO: they assume few effective dimensions and need the
// reverse mapping for categoricals); TuRBO costs nothing beyond the GP we
// already have, handles mixed spaces by perturbing only a few coordinates
// around the center (categoricals switch with a probability that shrinks
// with the region, as CASMOPOLITAN does).
//
// As in TuRBO-1: the search runs as a sequence of local runs
// (restarts), each with its own data, GP and region. The region is a box
// of side L·w_i around the run's best observation (w_i the ARD
// lengthscales over their geometric mean, the lengthscales bounded to
// [0.005, 4] as TuRBO bounds them); L starts at 0.8, doubles after 3
// successive improving batches and halves after ⌈max(4, D)/q⌉ failing
// ones (q the batch size), within [0.5⁷, 1.6]; candidates (2000) perturb
// each coordinate of the center with probability min(1, 20/D) to a
// quasi-random value (scrambled Halton, where TuRBO uses scrambled
// Sobol) within the box; each point of a batch minimizes its own Thompson
// sample of the run's GP over them (thompson.go); the targets are only
// standardized over the run's data; the GP's noise variance is bounded
// by 1e-3 of the standardized variance (TuRBO-1's bound) unless the
// benchmark is known to be noisy. When the region collapses (L < 0.5⁷)
// the run ends and a new one starts from a fresh Latin-hypercube design
// of 2·D points, its GP fitted on its own data only; the history keeps
// every run's points, so the best observation and the resume logic are
// unchanged (a resumed optimizer starts one run over all its history).
// Differences: the hyperparameters are MAP estimates (a log-normal
// lengthscale prior of median 0.5, TuRBO's initial lengthscale, within
// its bounds), fitted on the 150 points of
// the run nearest its best one and refitted as the data grow rather than
// every batch; the region is used once 2·D points are observed (the
// first run's design is the global search before it, with the sparse
// lengthscale prior from 20 dimensions up); in noise-aware mode the
// center is the run's point with the lowest posterior mean; spaces with
// categorical dimensions keep the global GP and use log EI on the
// region's candidates instead of Thompson sampling.
const (
	TrustRegionMinDims = 20
	trInitLength       = 0.8
	trMinLength        = 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 // 0.5^7
	trMaxLength        = 1.6
	// trStartFactor·D observations come before the region is used: until
	// then the global GP (with its per-dimension lengthscales) searches,
	// which finds the few dimensions that matter of a function like Branin
	// embedded in 30-D far sooner than a local region does.
	trStartFactor = 2
	trFitPoints   = maxFitPoints
)

// Settings of the region (variables so that experiments can vary them).
var (
	trSuccTol = 3
	// trCandidates is the number of candidates per suggestion; 0 takes
	// TuRBO's min(5000, max(2000, 200·D)).
	trCandidates = 2000
	// trMaxWeight clips the weights of the region's sides to
	// [1/trMaxWeight, trMaxWeight]; 0: only the lengthscale bounds.
	trMaxWeight = 0.0
	// The local fit's bounds: lengthscales (inputs in [0,1]) and noise
	// variance (targets standardized), and the log-normal lengthscale
	// prior's standard deviation.
	trLenLo   = 0.005
	trLenHi   = 4.0
	trNoiseHi = 1e-3
	trLenSD   = lenSD
	// trLenMu is the median of the local fit's log-normal lengthscale
	// prior: TuRBO's initial lengthscale, 0.5 (the global GP's, 0.3·√D,
	// is 1.34 in 20-D: too smooth a model for the region).
	trLenMu = 0.5
	// A collapsed region restarts from a fresh design of
	// trRestartFactor·D points.
	trRestartFactor = trStartFactor
)

type trustRegion struct {
	d          int
	length     float64
	succ, fail int
	best       float64 // the best observed value of the current restart
	lastBest   float64 // the best at the previous round
	restarts   int

	// TuRBO-1's restarts: the current restart's data are the history
	// entries from lo on; design is its fresh space-filling design,
	// handed out before the region searches (nil once observed).
	lo     int
	design []tunables.Point
	// The restart's own GP (numeric spaces): hyperparameters fitted on
	// its data, and the cached model holding its first baseN points
	// (-1: rebuild).
	theta hyper
	fitN  int
	g     *gp
	baseN int
}

func newTrustRegion(d int) *trustRegion {
	return &trustRegion{d: d, length: trInitLength, best: math.Inf(1), lastBest: math.Inf(1), baseN: -1}
}

// update takes in an observed value (to minimize).
func (t *trustRegion) update(y float64) {
	if !math.IsInf(y, 0) && !math.IsNaN(y) {
		t.best = min(t.best, y)
	}
}

// round is called when a batch of k points is about to be suggested: the
// observations since the previous round are a success when they improved
// the best value (as TuRBO counts batches). The side doubles after
// trSuccTol successive successes and halves after ⌈max(4, D)/k⌉
// successive failures. It reports whether the region collapsed (side
// below 0.5⁷).
func (t *trustRegion) round(k int) bool {
	if math.IsInf(t.lastBest, 1) {
		t.lastBest = t.best
		return false
	}
	if t.best < t.lastBest-1e-3*math.Abs(t.lastBest) {
		t.succ++
		t.fail = 0
	} else {
		t.fail++
		t.succ = 0
	}
	t.lastBest = t.best
	failTol := (max(4, t.d) + k - 1) / max(k, 1)
	switch {
	case t.succ >= trSuccTol:
		t.length = min(2*t.length, trMaxLength)
		t.succ = 0
	case t.fail >= failTol:
		t.length /= 2
		t.fail = 0
	}
	return t.length < trMinLength
}

// restart starts a new local run whose data begin at history entry lo,
// with a fresh design (TuRBO-1's restart: a new region of the initial
// size, a new local GP that sees only the restart's own data).
func (t *trustRegion) restart(lo int, design []tunables.Point) {
	*t = trustRegion{d: t.d, length: trInitLength, best: math.Inf(1), lastBest: math.Inf(1),
		restarts: t.restarts + 1, lo: lo, design: design, baseN: -1}
}

// trustCandidates returns points in the trust region around center: each
// numeric coordinate is perturbed with probability min(1, 20/D) (one
// coordinate at least) to a quasi-random value (a scrambled Halton
// sequence, as TuRBO-1 uses a scrambled Sobol one) within ±L·w_i/2, w_i
// the lengthscales of th over their geometric mean, the region clipped to
// the unit box; categoricals switch with probability L/(2·L_max) among
// the perturbed ones.
func (o *Optimizer) trustCandidates(center tunables.Point, n int, th hyper) []tunables.Point {
	dims := o.sp.Dims()
	d := len(dims)
	w := trWeights(th, o.cat)
	qmc := o.quasiRandom(n, d)
	prob := min(1, 20/float64(d))
	L := o.tr.length
	out := make([]tunables.Point, 0, n)
	set := func(q tunables.Point, i int, u float64) {
		switch dims[i].Kind {
		case tunables.DimNumeric:
			half := L * w[i] / 2
			lo, hi := max(0, center[i]-half), min(1, center[i]+half)
			q[i] = lo + u*(hi-lo)
		case tunables.DimCategorical:
			if dims[i].Choices > 1 && o.rng.Float64() < L/(2*trMaxLength) {
				q[i] = float64(o.sp.RandomChoice(i, o.rng))
			}
		}
	}
	for c := range n {
		q := slices.Clone(center)
		row := qmc[c*d : (c+1)*d]
		moved := false
		for i := range dims {
			if prob < 1 && o.rng.Float64() >= prob {
				continue
			}
			moved = true
			set(q, i, row[i])
		}
		if !moved {
			i := o.rng.IntN(d)
			set(q, i, row[i])
		}
		o.sp.SnapInPlace(q)
		out = append(out, q)
	}
	return out
}

// trWeights are TuRBO's weights of the region's sides: the numeric
// lengthscales over their geometric mean (their bounds in the region's
// fit, trLenLo to trLenHi, bound the ratios), optionally clipped to
// [1/trMaxWeight, trMaxWeight].
func trWeights(th hyper, cat []bool) []float64 {
	d := len(cat)
	w := make([]float64, d)
	logSum, cnt := 0.0, 0
	for i := range d {
		if !cat[i] {
			logSum += th[i]
			cnt++
		}
	}
	mean := 0.0
	if cnt > 0 {
		mean = logSum / float64(cnt)
	}
	for i := range d {
		w[i] = math.Exp(th[i] - mean)
		if trMaxWeight > 0 {
			w[i] = min(trMaxWeight, max(1/trMaxWeight, w[i]))
		}
	}
	return w
}

// quasiRandom returns n points of [0,1)^d, row by row: a Halton sequence
// scrambled by Owen's random digit permutations (gonum's samplemv), or
// uniform random points above its 1000 dimensions.
func (o *Optimizer) quasiRandom(n, d int) []float64 {
	if d <= 1000 {
		m := mat.NewDense(n, d, nil)
		samplemv.Halton{Kind: samplemv.Owen, Q: distmv.NewUnitUniform(d, nil), Src: o.rng}.Sample(m)
		return m.RawMatrix().Data
	}
	out := make([]float64, n*d)
	for i := range out {
		out[i] = o.rng.Float64()
	}
	return out
}

// maximizeAcqTrust maximizes the acquisition over candidates in the trust
// region around the best point of the current restart (no gradient
// refinement: it would leave the region). It serves spaces with
// categorical dimensions; numeric ones use trSuggest.
func (o *Optimizer) maximizeAcqTrust(a *acq, avoid func(string) bool) tunables.Point {
	anchors := o.anchors(a.g)
	if len(anchors) == 0 {
		return nil
	}
	center := anchors[0]
	if !o.aware {
		// TuRBO's center, the best observation of the restart; in
		// noise-aware mode the lowest posterior mean, which a lucky
		// outlier does not move.
		if b := o.trBestObserved(); b != nil {
			center = b
		}
	}
	var cands []cand
	for _, p := range o.trustCandidates(center, trCandidates, o.theta) {
		if !avoid(space.Key(p)) {
			cands = append(cands, cand{p, a.value(p)})
		}
	}
	if len(cands) == 0 {
		return o.randomFree(avoid)
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.f > best.f {
			best = c
		}
	}
	return best.p
}

// trBestObserved is the observed point of the current restart with the
// lowest mean value, or nil.
func (o *Optimizer) trBestObserved() tunables.Point {
	var best tunables.Point
	bestY := math.Inf(1)
	for _, e := range o.hist.Entries()[o.tr.lo:] {
		if e.N == 0 {
			continue
		}
		if y := e.Mean()[0]; best == nil || y < bestY {
			best, bestY = e.X, y
		}
	}
	return best
}

// trActive reports whether the next suggestions come from the trust
// region: it exists, there is one objective and 2·D points are observed.
func (o *Optimizer) trActive() bool {
	return o.tr != nil && o.m == 1 && o.hist.Len() >= trStartFactor*o.sp.Len()
}

// numericOnly reports whether the space has no categorical dimension.
func (o *Optimizer) numericOnly() bool {
	for _, c := range o.cat {
		if c {
			return false
		}
	}
	return true
}

// trStep runs before the model when the region is active: it hands out
// the fresh design of a restart until it is observed, then counts the
// round (success or failure) and, when the region collapsed, restarts
// TuRBO-1's way: a new Latin-hypercube design of trStartFactor·D points
// and a new local run that sees only its own data. While a design is
// being evaluated the rest of a batch is random, so out is full then.
func (o *Optimizer) trStep(k int, pend []tunables.Point, avoid func(string) bool, choose func(tunables.Point), out *[]tunables.Point) {
	t := o.tr
	if t.design != nil && o.hist.Len() >= t.lo+len(t.design) {
		t.design = nil // observed: the region searches from now on
	}
	if t.design == nil {
		if !t.round(k - len(*out)) {
			return
		}
		t.restart(o.hist.Len(), o.sp.LatinHypercube(trRestartFactor*o.sp.Len(), o.rng))
	}
	budget := t.lo + len(t.design)
	for _, p := range t.design {
		if len(*out) >= k || o.hist.Len()+len(pend)+len(*out) >= budget {
			break
		}
		if !avoid(space.Key(p)) {
			choose(p)
		}
	}
	for len(*out) < k {
		p := o.randomFree(avoid)
		if p == nil {
			return
		}
		choose(p)
	}
}

// trObserved drops the cached local model when an existing point of the
// current restart got another measurement.
func (o *Optimizer) trObserved(idx []int) {
	if o.tr == nil {
		return
	}
	for _, i := range idx {
		if i >= o.tr.lo && o.tr.baseN >= 0 && i < o.tr.lo+o.tr.baseN {
			o.tr.baseN = -1
		}
	}
}

// trUsesLocalModel reports whether the region's suggestions come from
// trSuggest (its own GP and Thompson sampling): numeric spaces with one
// objective. Spaces with categorical dimensions use the global model and
// log EI over the region's candidates.
func (o *Optimizer) trUsesLocalModel() bool {
	return o.trActive() && o.numericOnly() && o.enumerate() == nil
}

// trPrepare brings the local GP up to date with the current restart's
// data (TuRBO-1's local model): targets standardized over the restart's
// points only, hyperparameters refitted as its data grow.
func (o *Optimizer) trPrepare() error {
	t := o.tr
	entries := o.hist.Entries()[t.lo:]
	n := len(entries)
	xs := make([][]float64, n)
	for i, e := range entries {
		xs[i] = o.encode(e.X)
	}
	cnt := o.counts()[t.lo:]
	y := transformOutputs(o.rawTargets(nil)[t.lo:], false)
	if t.theta == nil || n >= t.fitN+refitEvery(t.fitN) {
		o.trFit(xs, cnt, y)
		t.fitN = n
		t.baseN = -1
	}
	var err error
	t.g, t.baseN, err = syncGP(t.g, t.baseN, o.cat, t.theta, xs, cnt, y, false)
	return err
}

// trFit fits the local GP's hyperparameters on the restart's data (the
// trFitPoints nearest its best point when there are more), with
// lengthscales bounded to [trLenLo, trLenHi] as TuRBO bounds them.
func (o *Optimizer) trFit(xs [][]float64, cnt, y []float64) {
	t := o.tr
	if len(xs) > trFitPoints {
		best := 0
		for i, v := range y {
			if v < y[best] {
				best = i
			}
		}
		keep := nearest(xs, best, trFitPoints)
		sort.Ints(keep)
		var sx [][]float64
		var sc, sy []float64
		for _, i := range keep {
			sx, sc, sy = append(sx, xs[i]), append(sc, cnt[i]), append(sy, y[i])
		}
		xs, cnt, y = sx, sc, standardize(sy)
	}
	pr := o.trPriors()
	f := newFitData(xs, cnt, y, o.cat, pr)
	var starts []hyper
	if t.theta != nil {
		starts = append(starts, t.theta, pr.sample(o.rng))
	} else {
		starts = append(starts, pr.defaultHyper())
		for range 4 {
			starts = append(starts, pr.sample(o.rng))
		}
	}
	t.theta, _ = fitHyper(f, starts, 60)
}

// trPriors are the priors of the local fit: the usual ones (with the
// empirical noise prior in noise-aware mode) without the sparse prior,
// the lengthscales bounded to [trLenLo, trLenHi], and, unless the
// benchmark is known to be noisy (noise-aware mode, or repeated points
// that measured a noise), the noise variance below trNoiseHi as TuRBO-1
// bounds it: a ripple of the function must not be explained as noise.
func (o *Optimizer) trPriors() priors {
	base := o.noisePriors()
	d := o.sp.Len()
	p := priors{mu: slices.Clone(base.mu), sd: slices.Clone(base.sd), lo: slices.Clone(base.lo), hi: slices.Clone(base.hi)}
	for i := range d {
		p.lo[i], p.hi[i] = math.Log(trLenLo), math.Log(trLenHi)
		if trLenMu > 0 {
			p.mu[i] = math.Log(trLenMu)
		}
		p.mu[i] = min(max(p.mu[i], p.lo[i]), p.hi[i])
		p.sd[i] = trLenSD
	}
	if _, noisy := o.repeatNoise(); !o.aware && !noisy {
		p.hi[d+1] = min(p.hi[d+1], math.Log(trNoiseHi))
		p.mu[d+1] = min(p.mu[d+1], p.hi[d+1])
	}
	return p
}

// trSuggest fills out up to k points TuRBO-1's way: the local GP of the
// current restart (pending points added with their posterior mean), one
// candidate set in the region around the restart's best point, and per
// point of the batch the candidate minimizing its own Thompson sample.
func (o *Optimizer) trSuggest(k int, pend []tunables.Point, avoid func(string) bool, choose func(tunables.Point), out *[]tunables.Point) error {
	if o.trBestObserved() == nil {
		// Nothing of the run succeeded yet: nothing to center on.
		for len(*out) < k {
			p := o.randomFree(avoid)
			if p == nil {
				break
			}
			choose(p)
		}
		return nil
	}
	if err := o.trPrepare(); err != nil {
		return err
	}
	t := o.tr
	g := t.g
	base := g.n
	center := o.trBestObserved()
	if o.aware {
		// The lowest posterior mean, which a lucky outlier does not move.
		bi, bmu := -1, math.Inf(1)
		for i := range base {
			if mu := g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i]; mu < bmu {
				bi, bmu = i, mu
			}
		}
		if bi >= 0 {
			center = o.hist.Entries()[t.lo+bi].X
		}
	}
	defer g.truncate(base)
	for _, p := range pend {
		x := o.encode(p)
		mu, _ := g.predict(x)
		g.appendPoint(x, g.noise, mu)
	}
	var pts []tunables.Point
	var xs [][]float64
	for _, p := range o.trustCandidates(center, trNumCandidates(o.sp.Len()), t.theta) {
		if !avoid(space.Key(p)) {
			pts = append(pts, p)
			xs = append(xs, o.encode(p))
		}
	}
	o.thompsonPick(g.newTSBatch(xs), pts, k, nil, avoid, choose, out)
	return nil
}

// thompsonPick chooses until out holds k points: each the candidate of pts
// with the lowest value in a fresh joint sample of ts (one candidate once;
// skip, if not nil, rules candidates out by index), or a random free point
// once no candidate is left.
func (o *Optimizer) thompsonPick(ts *tsBatch, pts []tunables.Point, k int, skip func(int) bool, avoid func(string) bool, choose func(tunables.Point), out *[]tunables.Point) {
	used := make([]bool, len(pts))
	for len(*out) < k {
		f := ts.sample(o.rng)
		best := -1
		for i, v := range f {
			if !used[i] && (skip == nil || !skip(i)) && (best < 0 || v < f[best]) {
				best = i
			}
		}
		if best < 0 {
			p := o.randomFree(avoid)
			if p == nil {
				break
			}
			choose(p)
			continue
		}
		used[best] = true
		choose(pts[best])
	}
}

// trNumCandidates is TuRBO's number of candidates, min(5000,
// max(2000, 200·D)), or trCandidates when set.
func trNumCandidates(d int) int {
	if trCandidates > 0 {
		return trCandidates
	}
	return min(5000, max(2000, 200*d))
}

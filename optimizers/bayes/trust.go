package bayes

import (
	"math"
	"slices"

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
// As in TuRBO-1: the region is a box of side L·w_i around the center (w_i
// the ARD lengthscales over their geometric mean), L starts at 0.8, doubles
// after 3 successive improving batches and halves after ⌈max(4, D)/q⌉
// failing ones (q the batch size), within [0.5⁷, 1.6]; the center is the
// best observation; 2000 candidates perturb each coordinate of the center
// with probability min(1, 20/D), uniformly within the box; each point of a
// batch minimizes its own Thompson sample of the GP over them
// (thompson.go); the targets are only standardized (no power warping).
// As TuRBO fits its GP on the region's data, the hyperparameters are
// fitted on the 150 points nearest the best one (bayes.go, fit).
// Differences: the GP keeps its MAP hyperparameters (priors in fit.go,
// refitted as data grows, not every batch), its noise is not capped at
// TuRBO's 1e-3, and the weights are clipped to [1/4, 4]; the region is
// used once 2·D points are observed (global search before, with the sparse
// lengthscale prior from 20 dimensions up); in noise-aware mode the center
// is the observed point with the lowest posterior mean; spaces with
// categorical dimensions use log EI on the candidates instead of Thompson
// sampling; a collapsed region (L < 0.5⁷) is reset to its initial size
// around the same center instead of TuRBO's restart from a fresh design
// without the old data, so that the history and the resume logic stay
// unchanged.
const (
	TrustRegionMinDims = 20
	trInitLength       = 0.8
	trMinLength        = 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 // 0.5^7
	trMaxLength        = 1.6
	trSuccTol          = 3
	trCandidates       = 2000 // TuRBO: min(5000, max(2000, 200·D))
	trMaxWeight        = 4.0
	// trStartFactor·D observations come before the region is used: until
	// then the global GP (with its per-dimension lengthscales) searches,
	// which finds the few dimensions that matter of a function like Branin
	// embedded in 30-D far sooner than a local region does.
	trStartFactor = 2
)

type trustRegion struct {
	d          int
	length     float64
	succ, fail int
	best       float64 // the best observed value
	lastBest   float64 // the best at the previous round
	restarts   int
}

func newTrustRegion(d int) *trustRegion {
	return &trustRegion{d: d, length: trInitLength, best: math.Inf(1), lastBest: math.Inf(1)}
}

// update takes in an observed value (to minimize).
func (t *trustRegion) update(y float64) {
	if !math.IsInf(y, 0) && !math.IsNaN(y) {
		t.best = min(t.best, y)
	}
}

// round is called when a batch of k points is about to be suggested: the
// observations since the previous round are a success when they improved
// the best value (as TuRBO counts batches). The side doubles after 3
// successive successes and halves after ⌈max(4, D)/k⌉ successive failures.
func (t *trustRegion) round(k int) {
	if math.IsInf(t.lastBest, 1) {
		t.lastBest = t.best
		return
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
	if t.length < trMinLength {
		t.length = trInitLength
		t.restarts++
	}
}

// trustCandidates returns points in the trust region around center: each
// numeric coordinate is perturbed with probability min(1, 20/D) uniformly
// within ±L·w_i/2 (w_i the lengthscales normalized to a geometric mean of
// 1 and clipped to [1/4, 4]; the region clipped to the unit box), categoricals switch with probability
// L/(2·L_max) among the perturbed ones.
func (o *Optimizer) trustCandidates(center tunables.Point, n int) []tunables.Point {
	dims := o.sp.Dims()
	d := len(dims)
	w := make([]float64, d)
	logSum, cnt := 0.0, 0
	for i := range d {
		if !o.cat[i] {
			logSum += o.theta[i]
			cnt++
		}
	}
	mean := 0.0
	if cnt > 0 {
		mean = logSum / float64(cnt)
	}
	for i := range d {
		// Clipped: with many irrelevant dimensions (huge lengthscales) the
		// relevant ones would otherwise get a region too thin to move in.
		w[i] = min(trMaxWeight, max(1/trMaxWeight, math.Exp(o.theta[i]-mean)))
	}
	prob := min(1, 20/float64(d))
	L := o.tr.length
	out := make([]tunables.Point, 0, n)
	for range n {
		q := slices.Clone(center)
		moved := false
		for i, dm := range dims {
			if o.rng.Float64() >= prob {
				continue
			}
			moved = true
			switch dm.Kind {
			case tunables.DimNumeric:
				half := L * w[i] / 2
				lo, hi := max(0, center[i]-half), min(1, center[i]+half)
				q[i] = lo + o.rng.Float64()*(hi-lo)
			case tunables.DimCategorical:
				if dm.Choices > 1 && o.rng.Float64() < L/(2*trMaxLength) {
					q[i] = float64(o.sp.RandomChoice(i, o.rng))
				}
			}
		}
		if !moved {
			i := o.rng.IntN(d)
			if dims[i].Kind == tunables.DimNumeric {
				half := L * w[i] / 2
				lo, hi := max(0, center[i]-half), min(1, center[i]+half)
				q[i] = lo + o.rng.Float64()*(hi-lo)
			}
		}
		o.sp.SnapInPlace(q)
		out = append(out, q)
	}
	return out
}

// maximizeAcqTrust maximizes the acquisition over candidates in the trust
// region around the observed point with the lowest posterior mean (no
// gradient refinement: it would leave the region).
func (o *Optimizer) maximizeAcqTrust(a *acq, avoid func(string) bool) tunables.Point {
	anchors := o.anchors(a.g)
	if len(anchors) == 0 {
		return nil
	}
	center := anchors[0]
	if !o.aware {
		// TuRBO's center, the best observation; in noise-aware mode the
		// lowest posterior mean, which a lucky outlier does not move.
		if b, ok := o.hist.Best(); ok {
			center = b.X
		}
	}
	if o.numericOnly() {
		return o.thompsonTrust(a.g, center, avoid)
	}
	var cands []cand
	for _, p := range o.trustCandidates(center, trCandidates) {
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

// thompsonTrust returns the candidate of the trust region around center
// with the lowest value of one posterior sample (thompson.go), as TuRBO-1
// chooses each point of a batch.
func (o *Optimizer) thompsonTrust(g *gp, center tunables.Point, avoid func(string) bool) tunables.Point {
	var pts []tunables.Point
	var xs [][]float64
	for _, p := range o.trustCandidates(center, trCandidates) {
		if !avoid(space.Key(p)) {
			pts = append(pts, p)
			xs = append(xs, o.encode(p))
		}
	}
	if len(pts) == 0 {
		return o.randomFree(avoid)
	}
	f := g.thompsonSample(xs, o.rng)
	best := 0
	for i, v := range f {
		if v < f[best] {
			best = i
		}
	}
	return pts[best]
}

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
// with the region, as CASMOPOLITAN does), and keeps the log-EI
// acquisition. Differences from TuRBO-1: the region is used once 2·D
// points are observed (global search before); log EI on candidates in the
// region instead of Thompson sampling; no hard restart with fresh data
// when the region collapses (it is reset to its initial size around the
// incumbent), so that the history and the resume logic stay unchanged.
const (
	TrustRegionMinDims = 20
	trInitLength       = 0.8
	trMinLength        = 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 // 0.5^7
	trMaxLength        = 1.6
	trSuccTol          = 3
	trCandidates       = 1024
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
	var cands []cand
	for _, p := range o.trustCandidates(anchors[0], trCandidates) {
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

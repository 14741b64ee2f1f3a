// Package curve extrapolates a learning curve: given the values a run
// reported at its first steps (a validation error per epoch, a
// throughput per second of a benchmark), it predicts the value the run
// would reach at a later step, with an uncertainty. It is the
// learning-curve extrapolation of Domhan, Springenberg & Hutter (IJCAI
// 2015) in a small, deterministic form: a weighted ensemble of monotone
// parametric families, each written as
//
//	y(t) = c + a·g_θ(t),
//
// with g_θ decreasing from about 1 to 0 (c is the asymptote), over a grid
// of the nonlinear parameters θ:
//
//   - pow3:      g = t^(−α)
//   - pow4:      g = (1 + t/β)^(−α)
//   - exp:       g = exp(−t/β)
//   - weibull:   g = exp(−(t/β)^δ)   (Janoschek / MMF-like sigmoids in log t)
//   - logpower:  g = 1/(1 + (t/β)^α) (Hill / log-logistic)
//
// For a fixed θ the model is linear in (c, a), so the posterior of (c, a)
// under a Gaussian prior and Gaussian noise is exact (Bayesian linear
// regression), and so is the marginal likelihood of θ; the prediction is
// the mixture over the whole grid (every family weighs the same a priori,
// spread evenly over its grid points), weighted by those likelihoods. Its
// standard deviation combines each member's parameter uncertainty, which
// grows with the distance from the observed steps, and the spread between
// members. Instead of Domhan et al.'s MCMC the grid makes the fit exact,
// cheap (a few hundred 2×2 solves) and reproducible.
//
// The sign of a is free: a curve may go down (an error) or up (an
// accuracy, a throughput warming up); g's monotonicity keeps every member
// monotone. The β grids scale with the horizon (the step to predict).
package curve

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Options are the priors of a fit. The zero value is valid.
type Options struct {
	// NoiseSD is a prior guess of the standard deviation of one observed
	// value's noise, e.g. pooled over other runs' fits (0: estimated from
	// this curve alone).
	NoiseSD float64
	// NoiseDF is the weight of NoiseSD in pseudo-observations (0: 3).
	NoiseDF float64
	// Shapes, when not nil, is the prior weight of each member of the
	// grid (GridSize of them, e.g. Model.Shapes averaged over other runs'
	// fits: an empirical-Bayes prior on the shape of the curves); it is
	// mixed half and half with the default prior (every family equal), so
	// that no shape is ruled out. Nil: the default prior.
	Shapes []float64
	// Scale is the prior standard deviation of the asymptote's distance
	// from the last observed value, and of a (0: from the data: 3× the
	// observed range, at least 10 noise SDs).
	Scale float64
}

// Prediction is a predicted value: the mean and standard deviation of the
// noise-free curve at one step.
type Prediction struct {
	Mean, SD float64
}

// Model is a fitted curve.
type Model struct {
	members []member
	sigma   float64 // the noise SD used in the fit
	last    float64 // the largest observed step
	h       float64 // the horizon of the fit (the β's scale)
	y0, mag float64 // the standardization: y = y0 + mag·(fitted value)
}

type member struct {
	fam   int
	idx   int // the member's index in the whole grid
	theta [2]float64
	w     float64    // normalised posterior weight
	m     [2]float64 // posterior mean of (c, a)
	s     [3]float64 // posterior covariance of (c, a): s00, s01, s11
}

// MinPoints is the fewest distinct steps Fit accepts.
const MinPoints = 3

// ErrTooShort is returned by Fit for fewer than MinPoints distinct steps.
var ErrTooShort = errors.New("curve: too few distinct steps to fit")

const (
	famPow3 = iota
	famPow4
	famExp
	famWeibull
	famLogPower
	nFamilies
)

// FamilyNames are the families, in the order of Model.FamilyWeights.
var FamilyNames = [nFamilies]string{"pow3", "pow4", "exp", "weibull", "logpower"}

// g is family fam's shape at step t (> 0) with parameters th, relative to
// horizon h (the β's are multiples of h).
func g(fam int, th [2]float64, t, h float64) float64 {
	switch fam {
	case famPow3:
		return math.Pow(t, -th[0])
	case famPow4:
		return math.Pow(1+t/(th[0]*h), -th[1])
	case famExp:
		return math.Exp(-t / (th[0] * h))
	case famWeibull:
		return math.Exp(-math.Pow(t/(th[0]*h), th[1]))
	default:
		return 1 / (1 + math.Pow(t/(th[0]*h), th[1]))
	}
}

// logspace returns n values from lo to hi, evenly spaced in log.
func logspace(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo * math.Pow(hi/lo, float64(i)/float64(n-1))
	}
	return out
}

// grid is every family's parameter grid.
var grid = func() [nFamilies][][2]float64 {
	var gr [nFamilies][][2]float64
	for _, a := range logspace(0.02, 3, 64) {
		gr[famPow3] = append(gr[famPow3], [2]float64{a})
	}
	for _, b := range logspace(0.002, 2, 28) {
		for _, a := range logspace(0.2, 3, 12) {
			gr[famPow4] = append(gr[famPow4], [2]float64{b, a})
		}
	}
	for _, b := range logspace(0.005, 20, 80) {
		gr[famExp] = append(gr[famExp], [2]float64{b})
	}
	for _, b := range logspace(0.01, 10, 32) {
		for _, d := range []float64{0.3, 0.5, 0.7, 1.5, 2, 3} {
			gr[famWeibull] = append(gr[famWeibull], [2]float64{b, d})
		}
	}
	for _, b := range logspace(0.002, 3, 28) {
		for _, a := range []float64{0.5, 0.75, 1, 1.5, 2, 3, 4} {
			gr[famLogPower] = append(gr[famLogPower], [2]float64{b, a})
		}
	}
	return gr
}()

// Fit fits the ensemble to the values y observed at steps t (> 0, any
// order; repeated steps are kept as repeated observations), for
// predictions up to about step horizon (> 0). It returns an error for
// input it cannot fit: lengths that differ, a step or value that is not
// finite, a step ≤ 0, a horizon ≤ 0, or fewer than MinPoints distinct
// steps (ErrTooShort).
func Fit(t, y []float64, horizon float64, opt Options) (*Model, error) {
	if len(t) != len(y) {
		return nil, fmt.Errorf("curve: %d steps but %d values", len(t), len(y))
	}
	if !(horizon > 0) || math.IsInf(horizon, 0) {
		return nil, fmt.Errorf("curve: horizon %v is not a positive number", horizon)
	}
	for i := range t {
		if !(t[i] > 0) || math.IsInf(t[i], 0) {
			return nil, fmt.Errorf("curve: step %v at index %d is not a positive number", t[i], i)
		}
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return nil, fmt.Errorf("curve: value %v at step %v is not finite", y[i], t[i])
		}
	}
	if opt.NoiseSD < 0 || math.IsNaN(opt.NoiseSD) || math.IsInf(opt.NoiseSD, 0) ||
		opt.NoiseDF < 0 || math.IsNaN(opt.NoiseDF) || math.IsInf(opt.NoiseDF, 0) ||
		opt.Scale < 0 || math.IsNaN(opt.Scale) || math.IsInf(opt.Scale, 0) {
		return nil, fmt.Errorf("curve: options %+v: each must be a finite number ≥ 0", opt)
	}
	steps := slices.Clone(t)
	slices.Sort(steps)
	if len(slices.Compact(steps)) < MinPoints {
		return nil, ErrTooShort
	}
	n := len(t)
	tLast, yLast := t[0], y[0]
	lo, hi := y[0], y[0]
	for i := range t {
		if t[i] >= tLast {
			tLast, yLast = t[i], y[i]
		}
		lo, hi = min(lo, y[i]), max(hi, y[i])
	}
	// The fit works on standardized values, (y − last)/mag, so that
	// neither huge nor tiny values overflow or vanish.
	mag := max(math.Abs(yLast), hi-lo)
	if !(mag > 0) || math.IsInf(mag, 0) {
		mag = 1
	}
	origY := y
	y = make([]float64, n)
	for i := range y {
		y[i] = (origY[i] - yLast) / mag
	}
	opt.NoiseSD /= mag
	opt.Scale /= mag
	lo, hi = (lo-yLast)/mag, (hi-yLast)/mag
	const floor = 1e-9 // the smallest noise SD: keeps exact curves finite

	// First pass: the least-squares residual of the best member, for the
	// noise estimate.
	sseMin := math.Inf(1)
	for fam := range nFamilies {
		for _, th := range grid[fam] {
			sseMin = min(sseMin, lsSSE(fam, th, t, y, horizon))
		}
	}
	var s2 float64
	dof := float64(n - 2)
	if opt.NoiseSD > 0 {
		df := opt.NoiseDF
		if df == 0 {
			df = 3
		}
		s2 = (df*opt.NoiseSD*opt.NoiseSD + sseMin) / (df + dof)
	} else {
		s2 = sseMin / dof
	}
	s2 = max(s2, floor*floor)
	scale := opt.Scale
	if scale == 0 {
		scale = max(3*(hi-lo), 10*math.Sqrt(s2), 1e-6)
	}
	p0 := 1 / (scale * scale) // prior precision of c and a
	m0 := [2]float64{0, 0}

	if opt.Shapes != nil && len(opt.Shapes) != GridSize() {
		return nil, fmt.Errorf("curve: %d shape weights for a grid of %d", len(opt.Shapes), GridSize())
	}
	shapeSum := 0.0
	for _, v := range opt.Shapes {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("curve: shape weight %v is not a finite number ≥ 0", v)
		}
		shapeSum += v
	}
	var ms []member
	maxLog := math.Inf(-1)
	gi0 := 0
	for fam := range nFamilies {
		famPrior := 1 / (float64(nFamilies) * float64(len(grid[fam])))
		for gi, th := range grid[fam] {
			prior := famPrior
			if shapeSum > 0 {
				prior = 0.5*famPrior + 0.5*opt.Shapes[gi0+gi]/shapeSum
			}
			logPrior := math.Log(prior)
			// A = XᵀX/σ² + P0, b = Xᵀy/σ² + P0 m0.
			var sg, sgg, sy, sgy float64
			for i := range t {
				gi := g(fam, th, t[i], horizon)
				sg += gi
				sgg += gi * gi
				sy += y[i]
				sgy += gi * y[i]
			}
			a00 := float64(n)/s2 + p0
			a01 := sg / s2
			a11 := sgg/s2 + p0
			b0 := sy/s2 + p0*m0[0]
			b1 := sgy/s2 + p0*m0[1]
			det := a00*a11 - a01*a01
			if !(det > 0) || math.IsInf(det, 0) {
				continue
			}
			c := (a11*b0 - a01*b1) / det
			a := (a00*b1 - a01*b0) / det
			sse := 0.0
			for i := range t {
				r := y[i] - c - a*g(fam, th, t[i], horizon)
				sse += r * r
			}
			dc, da := c-m0[0], a-m0[1]
			// log evidence up to a constant common to every member:
			// −½[‖y − Xm‖²/σ² + (m − m0)ᵀP0(m − m0) + log|A·Σ0|].
			logEv := -0.5 * (sse/s2 + p0*(dc*dc+da*da) + math.Log(det/(p0*p0)))
			lw := logPrior + logEv
			if math.IsNaN(lw) || math.IsInf(lw, 0) {
				continue
			}
			maxLog = max(maxLog, lw)
			ms = append(ms, member{fam: fam, idx: gi0 + gi, theta: th, w: lw, m: [2]float64{c, a},
				s: [3]float64{a11 / det, -a01 / det, a00 / det}})
		}
		gi0 += len(grid[fam])
	}
	if len(ms) == 0 {
		return nil, errors.New("curve: no member of the ensemble could be fitted")
	}
	sum := 0.0
	for i := range ms {
		ms[i].w = math.Exp(ms[i].w - maxLog)
		sum += ms[i].w
	}
	// Keep the members that carry the weight (the rest change nothing
	// visible and cost time at every prediction).
	slices.SortFunc(ms, func(x, y member) int {
		switch {
		case x.w > y.w:
			return -1
		case x.w < y.w:
			return 1
		}
		return 0
	})
	kept, acc := 0, 0.0
	for kept < len(ms) && acc < (1-1e-6)*sum {
		acc += ms[kept].w
		kept++
	}
	ms = ms[:kept]
	for i := range ms {
		ms[i].w /= acc
	}
	return &Model{members: ms, sigma: math.Sqrt(s2), last: tLast, h: horizon, y0: yLast, mag: mag}, nil
}

// lsSSE is the least-squares residual of member (fam, th) without a prior
// (+Inf when g does not vary over the steps).
func lsSSE(fam int, th [2]float64, t, y []float64, h float64) float64 {
	n := float64(len(t))
	var sg, sgg, sy, sgy float64
	for i := range t {
		gi := g(fam, th, t[i], h)
		sg += gi
		sgg += gi * gi
		sy += y[i]
		sgy += gi * y[i]
	}
	den := n*sgg - sg*sg
	if !(den > 1e-12*n*sgg) {
		return math.Inf(1)
	}
	a := (n*sgy - sg*sy) / den
	c := (sy - a*sg) / n
	sse := 0.0
	for i := range t {
		r := y[i] - c - a*g(fam, th, t[i], h)
		sse += r * r
	}
	return sse
}

// Predict returns the predicted noise-free value at step t (> 0; use the
// horizon given to Fit or a step near it), or NaN for a step ≤ 0.
func (m *Model) Predict(t float64) Prediction {
	if !(t > 0) || math.IsInf(t, 0) {
		return Prediction{Mean: math.NaN(), SD: math.NaN()}
	}
	h := m.h
	mean, second := 0.0, 0.0
	for _, e := range m.members {
		gt := g(e.fam, e.theta, t, h)
		mu := e.m[0] + e.m[1]*gt
		v := e.s[0] + 2*e.s[1]*gt + e.s[2]*gt*gt
		mean += e.w * mu
		second += e.w * (max(v, 0) + mu*mu)
	}
	return Prediction{Mean: m.y0 + m.mag*mean, SD: m.mag * math.Sqrt(max(second-mean*mean, 0))}
}

// NoiseSD is the noise standard deviation the fit used.
func (m *Model) NoiseSD() float64 { return m.mag * m.sigma }

// FamilyWeights returns the posterior weight of each family, in the order
// of FamilyNames.
func (m *Model) FamilyWeights() [nFamilies]float64 {
	var w [nFamilies]float64
	for _, e := range m.members {
		w[e.fam] += e.w
	}
	return w
}

// GridSize is the number of members of the ensemble (the length of
// Options.Shapes and Model.Shapes).
func GridSize() int {
	n := 0
	for _, g := range grid {
		n += len(g)
	}
	return n
}

// Shapes returns the posterior weight of every member of the grid
// (GridSize of them; summing to 1), to be averaged over runs into
// Options.Shapes.
func (m *Model) Shapes() []float64 {
	w := make([]float64, GridSize())
	for _, e := range m.members {
		w[e.idx] += e.w
	}
	return w
}

package tunables

import (
	"math"
	"math/rand/v2"
)

// weightedIndex draws a choice index with the given (normalized or not)
// weights; nil weights mean uniform. Zero-weight choices are never drawn.
func weightedIndex(rng *rand.Rand, weights []float64, n int) int {
	if weights == nil {
		return rng.IntN(n)
	}
	r := rng.Float64() * sum(weights)
	acc := 0.0
	last := 0
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		acc += w
		last = i
		if r < acc {
			return i
		}
	}
	return last // rounding at the top end
}

// drawUnit draws the unit coordinate of a numeric tunable from its prior.
//
//   - uniform (default): uniform on [0,1], i.e. uniform on the tunable's
//     scale (log-uniform for log tunables);
//   - normal(mu, sigma): a normal distribution truncated to the range,
//     centred on mu's coordinate; its standard deviation is sigma in the
//     tunable's units on a linear scale, and sigma in natural-log units on
//     a log scale;
//   - beta(alpha, beta): a beta distribution over the unit coordinate.
func (e *spaceEntry) drawUnit(rng *rand.Rand) float64 {
	d := e.def.dist
	if d == nil {
		return rng.Float64()
	}
	switch d.Type {
	case Normal:
		sc := e.sc
		var m, sd float64
		if sc.log {
			if d.Mu+sc.shift > 0 {
				m = sc.toUnit(d.Mu)
			} else {
				m = 0
			}
			sd = d.Sigma / (sc.lhi - sc.llo)
		} else {
			m = sc.toUnit(d.Mu)
			if span := sc.hi - sc.lo; math.IsInf(span, 0) {
				sd = d.Sigma / 2 / (sc.hi/2 - sc.lo/2)
			} else {
				sd = d.Sigma / span
			}
		}
		return truncNormalUnit(rng, m, sd)
	case Beta:
		return sampleBeta(rng, d.Alpha, d.Beta)
	}
	return rng.Float64()
}

// normCDF is the standard normal distribution function.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// normQuantile is its inverse.
func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// truncNormalUnit draws from N(m, sd) truncated to [0,1] by inverting the
// distribution function (one uniform draw per sample), working in the
// lower tail for accuracy.
func truncNormalUnit(rng *rand.Rand, m, sd float64) float64 {
	u := rng.Float64()
	if !(sd > 0) || math.IsInf(sd, 0) || math.IsNaN(m) {
		if math.IsInf(sd, 1) {
			return u
		}
		return clampUnit(m)
	}
	a, b := (0-m)/sd, (1-m)/sd
	flip := false
	if a > 0 { // both bounds in the upper tail: mirror into the lower one
		a, b, flip = -b, -a, true
	}
	pa, pb := normCDF(a), normCDF(b)
	var x float64
	if pb-pa <= 0 || math.IsNaN(pb-pa) {
		x = b // all mass sits at the bound nearest the mean
	} else {
		x = normQuantile(pa + u*(pb-pa))
		x = math.Min(math.Max(x, a), b)
	}
	if flip {
		x = -x
	}
	return clampUnit(m + sd*x)
}

// sampleBeta draws from Beta(alpha, beta) as X/(X+Y) with X ~ Gamma(alpha),
// Y ~ Gamma(beta), computed from log-gamma draws so that small shape
// parameters do not underflow.
func sampleBeta(rng *rand.Rand, alpha, beta float64) float64 {
	lx := logGamma(rng, alpha)
	ly := logGamma(rng, beta)
	return clampUnit(1 / (1 + math.Exp(ly-lx)))
}

// logGamma returns the log of a Gamma(a, 1) draw (Marsaglia and Tsang's
// method; for a < 1 the boost Gamma(a) = Gamma(a+1) * U^(1/a)).
func logGamma(rng *rand.Rand, a float64) float64 {
	if a < 1 {
		u := 1 - rng.Float64() // (0, 1]
		return logGamma(rng, a+1) + math.Log(u)/a
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return math.Log(d) + math.Log(v)
		}
	}
}

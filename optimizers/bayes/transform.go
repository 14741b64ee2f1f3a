package bayes

import (
	"math"
)

// Output transform: the GP models a monotone transform of the objective,
// which leaves its minimizers unchanged (so nothing is ever mapped back).
//
//  1. finite values are standardized;
//  2. when Warp is on, a Yeo-Johnson power transform with λ in [lambdaMin, 1]
//     fitted by maximum likelihood compresses a heavy upper tail (a few
//     very bad values, common for latencies and for Rosenbrock-like
//     functions) so that it does not flatten the model near the optimum;
//     λ = 1 is the identity, so well-behaved data is left as it is;
//  3. failed trials (+Inf) are imputed as the worst transformed value plus
//     a margin of 10 % of the transformed range;
//  4. the result is standardized to mean 0, standard deviation 1.

const (
	lambdaMin     = -1.0
	imputedMargin = 0.1
)

// transformOutputs maps raw values (+Inf = failed) to standardized model
// targets. It never returns Inf or NaN.
func transformOutputs(raw []float64, warp bool) []float64 {
	out := make([]float64, len(raw))
	var fin []float64
	for _, v := range raw {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			fin = append(fin, v)
		}
	}
	if len(fin) == 0 {
		return out // all failed: a flat model
	}
	z := standardize(fin)
	if warp && len(z) >= 3 {
		lam := fitYeoJohnson(z)
		for i, v := range z {
			z[i] = yeoJohnson(v, lam)
		}
	}
	lo, hi := z[0], z[0]
	for _, v := range z {
		lo, hi = min(lo, v), max(hi, v)
	}
	rng := hi - lo
	if rng <= 0 {
		rng = 1
	}
	imputed := hi + imputedMargin*rng
	j := 0
	for i, v := range raw {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			out[i] = imputed
		} else {
			out[i] = z[j]
			j++
		}
	}
	return standardize(out)
}

// standardize returns (v - mean) / sd (sd 1 when all values are equal).
func standardize(v []float64) []float64 {
	n := float64(len(v))
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / n)
	if !(sd > 1e-12*max(1, math.Abs(mean))) {
		sd = 1
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = (x - mean) / sd
	}
	return out
}

func yeoJohnson(y, lam float64) float64 {
	if y >= 0 {
		if math.Abs(lam) < 1e-9 {
			return math.Log1p(y)
		}
		return (math.Pow(y+1, lam) - 1) / lam
	}
	if math.Abs(lam-2) < 1e-9 {
		return -math.Log1p(-y)
	}
	return -(math.Pow(1-y, 2-lam) - 1) / (2 - lam)
}

// yjLogLik is the profile log-likelihood of λ for a normal model of the
// transformed values.
func yjLogLik(z []float64, lam float64) float64 {
	n := float64(len(z))
	mean, jac := 0.0, 0.0
	t := make([]float64, len(z))
	for i, v := range z {
		t[i] = yeoJohnson(v, lam)
		mean += t[i]
		if v >= 0 {
			jac += math.Log1p(v)
		} else {
			jac -= math.Log1p(-v)
		}
	}
	mean /= n
	ss := 0.0
	for _, v := range t {
		ss += (v - mean) * (v - mean)
	}
	if ss <= 0 {
		return math.Inf(-1)
	}
	return -n/2*math.Log(ss/n) + (lam-1)*jac
}

// fitYeoJohnson maximizes the profile likelihood over [lambdaMin, 1] by
// golden-section search.
func fitYeoJohnson(z []float64) float64 {
	a, b := lambdaMin, 1.0
	g := (math.Sqrt(5) - 1) / 2
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := yjLogLik(z, c), yjLogLik(z, d)
	for range 40 {
		if fc > fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = yjLogLik(z, c)
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = yjLogLik(z, d)
		}
	}
	lam := (a + b) / 2
	// Prefer the identity unless the transform is clearly better.
	if yjLogLik(z, 1) >= yjLogLik(z, lam)-1e-9 {
		return 1
	}
	return lam
}

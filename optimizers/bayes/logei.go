package bayes

import "math"

// Log expected improvement, computed stably for any z (Ament et al., 2023,
// "Unexpected improvements to expected improvement for Bayesian
// optimization"). For minimization with incumbent f*, posterior mean μ and
// standard deviation σ, z = (f* − μ)/σ and
//
//	EI = σ·h(z),  h(z) = φ(z) + z·Φ(z),
//
// so log EI = log σ + log h(z). For z ≪ 0 the direct formula cancels
// catastrophically and underflows; there h(z) = φ(z)·(1 − |z|·√(π/2)·
// erfcx(|z|/√2)) is used, and for very negative z the asymptotic
// series h(z) = φ(z)/z²·(1 − 3/z² + 15/z⁴ − …).

const (
	logSqrt2Pi  = 0.9189385332046727 // log √(2π)
	sqrtPiOver2 = 1.2533141373155003
	invSqrt2    = 0.7071067811865476
)

// erfcx is the scaled complementary error function exp(x²)·erfc(x) for
// x ≥ 0.
func erfcx(x float64) float64 {
	if x < 25 {
		return math.Exp(x*x) * math.Erfc(x)
	}
	// Asymptotic series 1/(x√π) · Σ (−1)^k (2k−1)!! / (2x²)^k.
	inv := 1 / (2 * x * x)
	sum, term := 1.0, 1.0
	for k := 1; k < 8; k++ {
		term *= -float64(2*k-1) * inv
		sum += term
	}
	return sum / (x * math.SqrtPi)
}

// logH returns log h(z) = log(φ(z) + z·Φ(z)).
func logH(z float64) float64 {
	switch {
	case z > -1:
		return math.Log(math.Exp(-z*z/2-logSqrt2Pi) + z*normCDF(z))
	case z > -1e4:
		r := -z * sqrtPiOver2 * erfcx(-z*invSqrt2) // in (0,1)
		return -z*z/2 - logSqrt2Pi + math.Log1p(-r)
	default:
		// h(z) = φ(z)/z² · (1 − 3/z² + 15/z⁴ − …)
		u := 1 / (z * z)
		return -z*z/2 - logSqrt2Pi + math.Log(u) + math.Log1p(-3*u+15*u*u)
	}
}

// dLogH returns d log h / dz = Φ(z)/h(z).
func dLogH(z float64) float64 {
	if z > -1 {
		return normCDF(z) / math.Exp(logH(z))
	}
	return math.Exp(logNormCDF(z) - logH(z))
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z*invSqrt2) }

// logNormCDF is log Φ(z), stable for very negative z.
func logNormCDF(z float64) float64 {
	if z > -5 {
		return math.Log(normCDF(z))
	}
	return math.Log(0.5*erfcx(-z*invSqrt2)) - z*z/2
}

// logEI returns log EI for incumbent best (minimization), mean mu and
// variance v.
func logEI(best, mu, v float64) float64 {
	s := math.Sqrt(v)
	return math.Log(s) + logH((best-mu)/s)
}

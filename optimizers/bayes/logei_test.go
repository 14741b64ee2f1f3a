package bayes

import (
	"math"
	"testing"
)

// TestLogEIMatchesDirect compares log h(z) with the direct formula where
// the direct formula is accurate.
func TestLogEIMatchesDirect(t *testing.T) {
	for z := -6.0; z <= 6; z += 0.125 {
		direct := math.Log(math.Exp(-z*z/2)/math.Sqrt(2*math.Pi) + z*0.5*math.Erfc(-z/math.Sqrt2))
		if got := logH(z); math.Abs(got-direct) > 1e-9*math.Max(1, math.Abs(direct)) {
			t.Errorf("logH(%v) = %v, direct %v", z, got, direct)
		}
	}
	// EI itself, for a few means and variances.
	for _, c := range []struct{ best, mu, v float64 }{{0, 0, 1}, {1, 0.5, 0.04}, {-1, 0.2, 2}} {
		s := math.Sqrt(c.v)
		z := (c.best - c.mu) / s
		ei := s * (math.Exp(-z*z/2)/math.Sqrt(2*math.Pi) + z*0.5*math.Erfc(-z/math.Sqrt2))
		if got := logEI(c.best, c.mu, c.v); math.Abs(got-math.Log(ei)) > 1e-10 {
			t.Errorf("logEI(%v) = %v, want %v", c, got, math.Log(ei))
		}
	}
}

// TestLogEIFarTail checks the stable branches against the asymptotic
// series h(z) = φ(z)/z²·(1 − 3/z² + 15/z⁴ − 105/z⁶ + …), where the direct
// formula underflows to −Inf.
func TestLogEIFarTail(t *testing.T) {
	for _, z := range []float64{-40, -100, -1e3, -9e3, -2e4, -1e6, -1e100} {
		u := 1 / (z * z)
		want := -z*z/2 - 0.5*math.Log(2*math.Pi) + math.Log(u) + math.Log1p(-3*u+15*u*u-105*u*u*u)
		got := logH(z)
		if math.IsInf(got, 0) || math.IsNaN(got) || math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("logH(%v) = %v, want %v", z, got, want)
		}
	}
	// Continuity across the branch points and monotonicity.
	prev := math.Inf(-1)
	for z := -2e4; z < 10; z *= 0.97 {
		if z > -1e-3 && z < 0 {
			break
		}
		if f := logH(z); f < prev {
			t.Fatalf("logH not increasing at z=%v: %v < %v", z, f, prev)
		} else {
			prev = f
		}
	}
	for _, b := range []float64{-1, -1e4} {
		lo, hi := logH(b*(1+1e-12)), logH(b*(1-1e-12))
		if math.Abs(hi-lo) > 1e-6*math.Abs(lo) {
			t.Errorf("logH jumps at %v: %v vs %v", b, lo, hi)
		}
	}
}

func TestDLogH(t *testing.T) {
	for _, z := range []float64{-300, -30, -5, -1.5, -1, -0.3, 0, 0.7, 4} {
		h := 1e-6 * math.Max(1, math.Abs(z))
		fd := (logH(z+h) - logH(z-h)) / (2 * h)
		if got := dLogH(z); math.Abs(got-fd) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("dLogH(%v) = %v, finite difference %v", z, got, fd)
		}
	}
}

func TestErfcx(t *testing.T) {
	for _, x := range []float64{0, 0.5, 3, 10, 24.9} {
		want := math.Exp(x*x) * math.Erfc(x)
		if got := erfcx(x); math.Abs(got-want) > 1e-13*want {
			t.Errorf("erfcx(%v) = %v, want %v", x, got, want)
		}
	}
	// Continuity at the switch to the asymptotic series (erfcx(25) ≈ 0.02254957).
	a, b := erfcx(25*(1-1e-14)), erfcx(25)
	if math.Abs(a-b) > 1e-12*a || math.Abs(b-0.0225495724326) > 1e-12 {
		t.Errorf("erfcx around 25: %v, %v", a, b)
	}
}

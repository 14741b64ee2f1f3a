package stats

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %.10g, want %.10g (±%g)", what, got, want, tol)
	}
}

// R's example in ?wilcox.test (Hollander & Wolfe, p. 110):
//
//	x <- c(0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46)
//	y <- c(1.15, 0.88, 0.90, 0.74, 1.21)
//	wilcox.test(x, y, alternative = "g")  # W = 35, p-value = 0.1272
//
// The exact distribution is symmetric, so the two-sided p-value is twice
// the one-sided one.
func TestMannWhitneyRExample(t *testing.T) {
	x := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	y := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	r, ok := MannWhitneyU(x, y)
	if !ok || !r.Exact {
		t.Fatalf("ok=%v exact=%v", ok, r.Exact)
	}
	near(t, "W", r.U, 35, 0)
	near(t, "one-sided p", r.P/2, 0.1272, 0.00005)
}

// SciPy's example in the scipy.stats.mannwhitneyu documentation (1.17):
//
//	males = [19, 22, 16, 29, 24]; females = [20, 11, 17, 12]
//	mannwhitneyu(males, females)                        # U1 = 17.0, p = 0.1111111111111111
//	mannwhitneyu(males, females, method="asymptotic")   # p = 0.11134688653314041
func TestMannWhitneySciPyExample(t *testing.T) {
	x := []float64{19, 22, 16, 29, 24}
	y := []float64{20, 11, 17, 12}
	r, ok := MannWhitneyU(x, y)
	if !ok || !r.Exact {
		t.Fatalf("ok=%v exact=%v", ok, r.Exact)
	}
	near(t, "U", r.U, 17, 0)
	near(t, "exact p", r.P, 0.1111111111111111, 1e-12)
	near(t, "asymptotic p", normalP(17, 5, 4, 0), 0.11134688653314041, 1e-12)
	// Swapping the samples mirrors U and keeps p.
	r2, _ := MannWhitneyU(y, x)
	near(t, "U swapped", r2.U, 3, 0)
	near(t, "p swapped", r2.P, r.P, 1e-12)
}

// Ties: x = 1 2 2 3, y = 2 3 4 5. Mid-ranks of the 8 values: 1 | 3 3 3 |
// 5.5 5.5 | 7 | 8, so R_x = 1+3+3+5.5 = 12.5 and U = 12.5 - 10 = 2.5.
// Tie groups of 3 and 2: sum t^3-t = 24+6 = 30. sigma^2 = 4*4/12 *
// (9 - 30/56) = 11.2857142857; z = (2.5 - 8 + 0.5)/sqrt(sigma^2) =
// -1.4883; p = 2*Phi(-1.4883) = 0.13667: the formula of R's
// wilcox.test(c(1,2,2,3), c(2,3,4,5)) (normal approximation with ties,
// correct = TRUE), worked by hand here; no R was at hand to run it.
func TestMannWhitneyTies(t *testing.T) {
	r, ok := MannWhitneyU([]float64{1, 2, 2, 3}, []float64{2, 3, 4, 5})
	if !ok || r.Exact {
		t.Fatalf("ok=%v exact=%v", ok, r.Exact)
	}
	near(t, "U", r.U, 2.5, 0)
	z := -5.0 / math.Sqrt(16.0/12*(9-30.0/56))
	near(t, "p", r.P, 2*normCDF(z), 1e-12)
	near(t, "p (by hand)", r.P, 0.1367, 0.0001)
}

func TestMannWhitneyEdges(t *testing.T) {
	if _, ok := MannWhitneyU(nil, []float64{1}); ok {
		t.Error("empty sample accepted")
	}
	if _, ok := MannWhitneyU([]float64{math.NaN()}, []float64{1}); ok {
		t.Error("NaN accepted")
	}
	r, _ := MannWhitneyU([]float64{1, 1, 1}, []float64{1, 1})
	near(t, "p all equal", r.P, 1, 0)
	// Completely separated samples of 5 and 5: p = 2/C(10,5) = 2/252.
	r, _ = MannWhitneyU([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	near(t, "p separated", r.P, 2.0/252, 1e-12)
	near(t, "MinP(5,5)", MinP(5, 5), 2.0/252, 1e-12)
	near(t, "MinP(3,3)", MinP(3, 3), 0.1, 1e-12)
	near(t, "MinP(4,4)", MinP(4, 4), 2.0/70, 1e-12)
	// The exact distribution sums to one for sizes up to the limit.
	d := uDist(49, 49)
	var s float64
	for _, p := range d {
		s += p
	}
	near(t, "sum of uDist(49,49)", s, 1, 1e-9)
}

func TestMedianCI(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if _, _, ok := MedianCI(xs, 0.95); ok {
		t.Error("5 values gave a 95% interval (coverage 0.9375)")
	}
	// n = 6: coverage of (x_(1), x_(6)) is 1 - 2/64 = 0.96875.
	lo, hi, ok := MedianCI([]float64{6, 1, 5, 2, 4, 3}, 0.95)
	if !ok || lo != 1 || hi != 6 {
		t.Errorf("n=6: %v %v %v", lo, hi, ok)
	}
	// n = 10: (x_(2), x_(9)) covers 0.9785; (x_(3), x_(8)) 0.891.
	lo, hi, ok = MedianCI([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.95)
	if !ok || lo != 2 || hi != 9 {
		t.Errorf("n=10: %v %v %v", lo, hi, ok)
	}
	near(t, "median even", Median([]float64{4, 1, 3, 2}), 2.5, 0)
}

func TestRelChangeCIDeterministic(t *testing.T) {
	x := []float64{10, 10.2, 9.9, 10.1, 10.05, 9.95}
	y := []float64{12, 12.1, 11.9, 12.2, 11.8, 12.05}
	lo1, hi1, ok1 := RelChangeCI(x, y, DefaultResamples, 0.95, 1)
	lo2, hi2, ok2 := RelChangeCI(x, y, DefaultResamples, 0.95, 1)
	if !ok1 || !ok2 || lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("not deterministic: %v %v / %v %v", lo1, hi1, lo2, hi2)
	}
	rc := RelChange(x, y)
	near(t, "relative change", rc, 0.2, 0.01)
	if !(lo1 <= rc && rc <= hi1) || lo1 < 0.15 || hi1 > 0.25 {
		t.Errorf("interval [%v, %v] around %v", lo1, hi1, rc)
	}
	if _, _, ok := RelChangeCI([]float64{0, 0}, y, 10, 0.95, 1); ok {
		t.Error("zero median accepted")
	}
}

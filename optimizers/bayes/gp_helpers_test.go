package bayes

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Shared set-up and checks of the GP tests (gp_test.go, additive_test.go,
// fit_test.go, ftk_test.go).

// mixedCat is the kind of each input of mixedPoints: two numeric, the
// last categorical.
func mixedCat() []bool { return []bool{false, false, true} }

// mixedPoints draws n points of the 3-D space of mixedCat (the category
// one of 0, 1, 2) and gives each its target and count from obs, called
// right after the point is drawn (it may draw from rng too).
func mixedPoints(rng *rand.Rand, n int, obs func(x []float64) (y, cnt float64)) (xs [][]float64, cnt, y []float64) {
	xs = make([][]float64, n)
	y = make([]float64, n)
	cnt = make([]float64, n)
	for i := range xs {
		xs[i] = []float64{rng.Float64(), rng.Float64(), float64(rng.IntN(3))}
		y[i], cnt[i] = obs(xs[i])
	}
	return xs, cnt, y
}

// testTheta is the hyperparameters of testGP's kernel on mixedCat's
// space: lengthscales 0.3, 0.5 and 0.8, σ_f² 1.3, noise 1e-3 (logs).
func testTheta() hyper {
	return hyper{math.Log(0.3), math.Log(0.5), math.Log(0.8), math.Log(1.3), math.Log(1e-3)}
}

// setDataIncremental gives g the first k points by setData and the rest
// one at a time by appendPoint (each with the noise over its count), the
// incremental factor that the tests compare with a direct one.
func setDataIncremental(t *testing.T, g *gp, xs [][]float64, cnt, y []float64, k int) {
	t.Helper()
	if err := g.setData(xs[:k], cnt[:k], y[:k]); err != nil {
		t.Fatal(err)
	}
	for i := k; i < len(xs); i++ {
		g.appendPoint(xs[i], g.noise/cnt[i], y[i])
	}
}

// shifted returns copies of x moved by h and by -h along coordinate i,
// for a central finite difference.
func shifted[S ~[]float64](x S, i int, h float64) (plus, minus S) {
	plus, minus = append(S(nil), x...), append(S(nil), x...)
	plus[i] += h
	minus[i] -= h
	return plus, minus
}

// checkNegLogPostGrad checks the analytic gradient of f's negative log
// posterior at th against central finite differences (step 1e-6): each
// entry within 1e-4 of the difference, relative to the larger of 1 and
// its size.
func checkNegLogPostGrad(t *testing.T, f *fitData, th hyper) {
	t.Helper()
	grad := make([]float64, len(th))
	f0 := f.negLogPost(th, grad)
	for i := range th {
		h := 1e-6
		tp, tm := shifted(th, i, h)
		fd := (f.negLogPost(tp, nil) - f.negLogPost(tm, nil)) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-4*math.Max(1, math.Abs(fd)) {
			t.Errorf("θ=%v: ∂/∂θ%d = %v, finite difference %v (f=%v)", th, i, grad[i], fd, f0)
		}
	}
}

// checkPredictGrad checks g.predictGrad at q: its mean and variance are
// predict's (within 1e-12), and its gradients along dims match central
// finite differences of predict (step 1e-6; within 1e-5, relative to the
// larger of 1 and the difference's size).
func checkPredictGrad(t *testing.T, g *gp, q []float64, dims []int) {
	t.Helper()
	dmu, dv := make([]float64, len(dims)), make([]float64, len(dims))
	mu, v := g.predictGrad(q, dims, dmu, dv)
	mu0, v0 := g.predict(q)
	if math.Abs(mu-mu0) > 1e-12 || math.Abs(v-v0) > 1e-12 {
		t.Fatalf("predictGrad value (%v, %v) != predict (%v, %v)", mu, v, mu0, v0)
	}
	for j, d := range dims {
		h := 1e-6
		qp, qm := shifted(q, d, h)
		mp, vp := g.predict(qp)
		mm, vm := g.predict(qm)
		if fd := (mp - mm) / (2 * h); math.Abs(fd-dmu[j]) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("dμ/dx%d at %v = %v, finite difference %v", d, q, dmu[j], fd)
		}
		if fd := (vp - vm) / (2 * h); math.Abs(fd-dv[j]) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("dσ²/dx%d at %v = %v, finite difference %v", d, q, dv[j], fd)
		}
	}
}

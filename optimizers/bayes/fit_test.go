package bayes

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestNegLogPostGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	xs, cnt, y := mixedPoints(rng, 30, func(x []float64) (float64, float64) {
		return math.Sin(4*x[0]) + 0.5*x[2] + 0.05*rng.NormFloat64(), float64(1 + rng.IntN(3))
	})
	f := newFitData(xs, cnt, standardize(y), mixedCat(), newPriors(3))
	// Points inside the bounds, and one outside (penalty branch).
	for _, th := range []hyper{
		{math.Log(0.3), math.Log(0.7), math.Log(1.5), 0.2, math.Log(1e-2)},
		{math.Log(1.1), math.Log(0.2), math.Log(0.05), -0.5, math.Log(0.3)},
		{math.Log(100), math.Log(0.2), math.Log(0.05), -0.5, math.Log(0.3)},
	} {
		checkNegLogPostGrad(t, f, th)
	}
}

// TestFitRecoversStructure fits hyperparameters on a function that depends
// on the first input only, with known measurement noise: the irrelevant
// input must get a much longer lengthscale, and the noise estimate must be
// close to the truth.
func TestFitRecoversStructure(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cat := []bool{false, false}
	n := 80
	const sd = 0.1
	xs := make([][]float64, n)
	y := make([]float64, n)
	for i := range xs {
		xs[i] = []float64{rng.Float64(), rng.Float64()}
		y[i] = math.Sin(2*math.Pi*xs[i][0]) + sd*rng.NormFloat64()
	}
	// Work in standardized units like the optimizer does.
	mean, ss := 0.0, 0.0
	for _, v := range y {
		mean += v
	}
	mean /= float64(n)
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	scale := math.Sqrt(ss / float64(n))
	pr := newPriors(2)
	f := newFitData(xs, ones(n), standardize(y), cat, pr)
	starts := []hyper{pr.defaultHyper(), pr.sample(rng), pr.sample(rng)}
	th, _ := fitHyper(f, starts, 100)
	l0, l1 := math.Exp(th[0]), math.Exp(th[1])
	if l1 < 3*l0 {
		t.Errorf("lengthscales %v, %v: the irrelevant input should have a much longer one", l0, l1)
	}
	if l0 < 0.05 || l0 > 0.6 {
		t.Errorf("lengthscale of sin(2πx) = %v, want a value in [0.05, 0.6]", l0)
	}
	noiseSD := math.Sqrt(math.Exp(th[3])) * scale
	if noiseSD < sd/2 || noiseSD > sd*2 {
		t.Errorf("estimated noise sd %v, true %v", noiseSD, sd)
	}
	// The fit improves on the starting point.
	if f.negLogPost(th, nil) > f.negLogPost(pr.defaultHyper(), nil) {
		t.Error("fitted hyperparameters are worse than the prior mode")
	}
}

func TestTransformOutputs(t *testing.T) {
	inf := math.Inf(1)
	heavy := []float64{1, 2, 1.5, 3, 2.5, 1000, 2, inf}
	for _, warp := range []bool{false, true} {
		out := transformOutputs(heavy, warp)
		mean, ss := 0.0, 0.0
		for i, v := range out {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("warp=%v: output %d is %v", warp, i, v)
			}
			mean += v
		}
		mean /= float64(len(out))
		for _, v := range out {
			ss += (v - mean) * (v - mean)
		}
		if math.Abs(mean) > 1e-9 || math.Abs(ss/float64(len(out))-1) > 1e-9 {
			t.Errorf("warp=%v: not standardized (mean %v, var %v)", warp, mean, ss/float64(len(out)))
		}
		// Order preserved, failure worst.
		for i := range heavy {
			for j := range heavy {
				if heavy[i] < heavy[j] && !(out[i] < out[j]) {
					t.Errorf("warp=%v: order of %v and %v not preserved", warp, heavy[i], heavy[j])
				}
			}
		}
	}
	// The warp compresses the outlier: good values are spread further
	// apart than without it.
	plain, warped := transformOutputs(heavy, false), transformOutputs(heavy, true)
	if warped[3]-warped[0] <= plain[3]-plain[0] {
		t.Errorf("warping did not spread the good values: %v vs %v", warped, plain)
	}
	// Degenerate inputs.
	for _, in := range [][]float64{{inf, inf}, {3, 3, 3}, {5}} {
		for _, v := range transformOutputs(in, true) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("transformOutputs(%v) produced %v", in, v)
			}
		}
	}
	// Well-behaved data is left as it is (λ = 1).
	if lam := fitYeoJohnson(standardize([]float64{-1.2, -0.5, 0.1, 0.3, 0.9, 1.4, -0.2, 0.6})); lam != 1 {
		t.Errorf("λ for symmetric data = %v, want 1", lam)
	}
}

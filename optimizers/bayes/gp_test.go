package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMatern(t *testing.T) {
	for _, sig2 := range []float64{0.5, 2} {
		if k, _ := matern(0, sig2); k != sig2 {
			t.Errorf("k(0) = %v, want %v", k, sig2)
		}
		prev := math.Inf(1)
		for _, r2 := range []float64{0, 0.01, 0.1, 1, 4, 25} {
			k, dk := matern(r2, sig2)
			if k > prev || k < 0 {
				t.Errorf("k(%v) = %v: not decreasing and positive", r2, k)
			}
			prev = k
			h := 1e-6 * max(r2, 1e-3)
			kp, _ := matern(r2+h, sig2)
			km, _ := matern(max(r2-h, 0), sig2)
			fd := (kp - km) / (r2 + h - max(r2-h, 0))
			if math.Abs(fd-dk) > 1e-5*math.Max(1, math.Abs(dk)) {
				t.Errorf("dk/dr²(%v) = %v, finite difference %v", r2, dk, fd)
			}
		}
	}
}

// testGP builds a GP on n random points of a 3-D space whose last feature
// is categorical.
func testGP(t *testing.T, n int, seed uint64) (*gp, [][]float64, []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	g := newGP(mixedCat(), testTheta())
	xs, cnt, y := mixedPoints(rng, n, func(x []float64) (float64, float64) {
		return math.Sin(5*x[0]) + x[1]*x[1] + 0.3*x[2], 1
	})
	if err := g.setData(xs, cnt, y); err != nil {
		t.Fatal(err)
	}
	return g, xs, y
}

// TestCholeskyJitter: identical points with (almost) no noise make the
// kernel matrix singular; the factorization must succeed by adding jitter.
func TestCholeskyJitter(t *testing.T) {
	cat := []bool{false, false}
	g := newGP(cat, hyper{math.Log(0.5), math.Log(0.5), 0, math.Log(1e-300)})
	xs := [][]float64{{0.2, 0.3}, {0.2, 0.3}, {0.2, 0.3}, {0.7, 0.1}, {0.7, 0.1 + 1e-12}}
	if err := g.setData(xs, []float64{1, 1, 1, 1, 1}, []float64{1, 1.1, 0.9, -1, -1}); err != nil {
		t.Fatalf("setData: %v", err)
	}
	if g.jitter <= 0 {
		t.Errorf("jitter = %v, want > 0 for a singular kernel matrix", g.jitter)
	}
	mu, v := g.predict([]float64{0.2, 0.3})
	if math.IsNaN(mu) || math.IsNaN(v) || v <= 0 || math.Abs(mu-1) > 0.01 {
		t.Errorf("predict at the repeated point = %v, %v; want mean ≈ 1 and positive variance", mu, v)
	}
	// A fantasy at an existing point keeps the factor usable.
	g.appendPoint([]float64{0.7, 0.1}, 0, -1)
	if mu, v := g.predict([]float64{0.5, 0.5}); math.IsNaN(mu) || math.IsNaN(v) {
		t.Errorf("predict after a duplicate fantasy = %v, %v", mu, v)
	}
}

// TestPosteriorMatchesDirect compares the incremental factor (points
// appended one by one, then truncated) with a fresh factorization.
func TestPosteriorMatchesDirect(t *testing.T) {
	g, xs, y := testGP(t, 30, 7)
	full := newGP(g.cat, testTheta())
	setDataIncremental(t, full, xs, ones(30), y, 20)
	q := []float64{0.4, 0.6, 1}
	mu1, v1 := g.predict(q)
	mu2, v2 := full.predict(q)
	if math.Abs(mu1-mu2) > 1e-8 || math.Abs(v1-v2) > 1e-8 {
		t.Errorf("incremental (%v, %v) != direct (%v, %v)", mu2, v2, mu1, v1)
	}
	// Interpolation: near-zero noise, the mean at a training point is its
	// target and the variance is small.
	mu, v := g.predict(xs[3])
	if math.Abs(mu-y[3]) > 0.05 || v > 0.01 {
		t.Errorf("at a training point: mean %v (target %v), variance %v", mu, y[3], v)
	}
	full.truncate(20)
	sub := newGP(g.cat, testTheta())
	if err := sub.setData(xs[:20], ones(20), y[:20]); err != nil {
		t.Fatal(err)
	}
	mu1, v1 = sub.predict(q)
	mu2, v2 = full.predict(q)
	if math.Abs(mu1-mu2) > 1e-10 || math.Abs(v1-v2) > 1e-10 {
		t.Errorf("after truncate (%v, %v) != direct (%v, %v)", mu2, v2, mu1, v1)
	}
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

func TestPredictGradient(t *testing.T) {
	g, _, _ := testGP(t, 25, 3)
	for _, q := range [][]float64{{0.3, 0.7, 0}, {0.9, 0.1, 2}, {0.51, 0.49, 1}} {
		checkPredictGrad(t, g, q, []int{0, 1})
	}
}

func TestAcquisitionGradient(t *testing.T) {
	g, _, _ := testGP(t, 25, 5)
	o := &Optimizer{}
	a := &acq{o: o, g: g, best: incumbent(g), dmu: make([]float64, 3), dv: make([]float64, 3), grad: make([]float64, 3)}
	dims := []int{0, 1}
	for _, q := range [][]float64{{0.3, 0.7, 0}, {0.95, 0.05, 2}, {0.5, 0.5, 1}} {
		f := a.valueGrad(q, dims)
		if f0 := a.valueX(q); math.Abs(f-f0) > 1e-10 {
			t.Fatalf("valueGrad %v != value %v", f, f0)
		}
		grad := append([]float64(nil), a.grad[:2]...)
		for j, d := range dims {
			h := 1e-6
			qp, qm := shifted(q, d, h)
			fd := (a.valueX(qp) - a.valueX(qm)) / (2 * h)
			if math.Abs(fd-grad[j]) > 1e-4*math.Max(1, math.Abs(fd)) {
				t.Errorf("dlogEI/dx%d at %v = %v, finite difference %v", d, q, grad[j], fd)
			}
		}
	}
}

// TestIncumbent: the incumbent is the lowest posterior mean over the
// training points (not the last point's, not the first's): it equals the
// minimum of predict() at every training point, and with little noise it
// is close to the smallest observation wherever that point sits.
func TestIncumbent(t *testing.T) {
	for _, seed := range []uint64{3, 11, 29} {
		g, xs, y := testGP(t, 25, seed)
		want := math.Inf(1)
		for _, x := range xs {
			mu, _ := g.predict(x)
			want = math.Min(want, mu)
		}
		got := incumbent(g)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("seed %d: incumbent %v, want the lowest posterior mean %v", seed, got, want)
		}
		minY := slices.Min(y)
		if math.Abs(got-minY) > 0.05 {
			t.Errorf("seed %d: incumbent %v far from the best observation %v", seed, got, minY)
		}
		// The best observation is not the last one here, so "the last
		// point" would differ.
		last, _ := g.predict(xs[len(xs)-1])
		if y[len(y)-1] != minY && math.Abs(last-got) < 1e-9 {
			t.Errorf("seed %d: the incumbent equals the last point's mean", seed)
		}
	}
}

package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// Samples drawn by pathwise conditioning have, over many draws, the GP
// posterior's mean and variance (up to the random-feature approximation
// and the Monte-Carlo error, both well inside the tolerances).
func TestThompsonSampleMatchesPosterior(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cat := []bool{false, false}
	g := newGP(cat, hyper{math.Log(0.3), math.Log(0.5), math.Log(1.5), math.Log(1e-3)})
	var xs [][]float64
	var cnt, y []float64
	for range 12 {
		x := []float64{rng.Float64(), rng.Float64()}
		xs = append(xs, x)
		cnt = append(cnt, 1)
		y = append(y, math.Sin(5*x[0])+x[1])
	}
	if err := g.setData(xs, cnt, y); err != nil {
		t.Fatal(err)
	}
	test := [][]float64{xs[0], {0.5, 0.5}, {0.05, 0.95}, {1.5, -0.5}}
	const draws = 600
	sum := make([]float64, len(test))
	sum2 := make([]float64, len(test))
	srng := rand.New(rand.NewPCG(5, 6))
	for range draws {
		for i, v := range g.thompsonSample(test, srng) {
			sum[i] += v
			sum2[i] += v * v
		}
	}
	for i, x := range test {
		mu, v := g.predict(x)
		m := sum[i] / draws
		sv := sum2[i]/draws - m*m
		sd := math.Sqrt(v)
		if math.Abs(m-mu) > 0.15*math.Sqrt(g.sig2)+4*sd/math.Sqrt(draws) {
			t.Errorf("point %v: sample mean %.4f, posterior mean %.4f (sd %.4f)", x, m, mu, sd)
		}
		if v > 1e-3 && (sv < 0.6*v || sv > 1.6*v) {
			t.Errorf("point %v: sample variance %.4f, posterior variance %.4f", x, sv, v)
		}
		if v <= 1e-3 && sv > 0.05*g.sig2 {
			t.Errorf("point %v (observed): sample variance %.4f, posterior variance %.4f", x, sv, v)
		}
	}
}

// From SparsePriorMinDims dimensions up, the lengthscales of dimensions
// the function does not depend on grow far beyond those it depends on.
func TestSparsePriorSwitchesOffIrrelevantDimensions(t *testing.T) {
	const d = 30
	o, err := New(unitDims(d), Options{Seed: 2, TrustRegion: -1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 40 {
		x := make(tunables.Point, d)
		for j := range x {
			x[j] = rng.Float64()
		}
		y := math.Sin(6*x[0]) + (x[1]-0.4)*(x[1]-0.4)*4
		if err := o.Observe(Observation{X: x, Y: []float64{y}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	longest := math.Max(o.theta[0], o.theta[1])
	for j := 2; j < d; j++ {
		if o.theta[j] < longest+math.Log(10) {
			t.Errorf("irrelevant dimension %d: lengthscale %.3g, relevant ones %.3g and %.3g",
				j, math.Exp(o.theta[j]), math.Exp(o.theta[0]), math.Exp(o.theta[1]))
		}
	}
	if dense := newPriors(10); dense.sparse {
		t.Error("below SparsePriorMinDims the lengthscales keep their log-normal priors")
	}
}

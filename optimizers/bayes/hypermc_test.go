package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// The slice sampler's draws follow known one-dimensional densities: a
// normal (mean 1.5, sd 0.7) and a half-normal (sd 1 on x ≥ 0, the
// density zero below, as outside a prior's bounds), whose mean is √(2/π)
// and variance 1 − 2/π. 20000 sweeps, within about 5 standard errors of
// the chain (its draws are correlated).
func TestSliceSamplerKnownPosteriors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		logp          func(x float64) float64
		start         float64
		mean, sd, tol float64
	}{
		{"normal", func(x float64) float64 { return -0.5 * (x - 1.5) * (x - 1.5) / 0.49 }, -3, 1.5, 0.7, 0.03},
		{"half-normal", func(x float64) float64 {
			if x < 0 {
				return math.Inf(-1)
			}
			return -0.5 * x * x
		}, 2, math.Sqrt(2 / math.Pi), math.Sqrt(1 - 2/math.Pi), 0.03},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		logp := func(th hyper) float64 { return tc.logp(th[0]) }
		x := hyper{tc.start}
		lx := logp(x)
		const n = 20000
		var s, s2 float64
		for i := range n + 100 {
			lx = sliceSweep(rng, x, lx, logp)
			if lx != logp(x) {
				t.Fatalf("%s: the sweep returned log density %v, at its point %v", tc.name, lx, logp(x))
			}
			if i >= 100 {
				s += x[0]
				s2 += x[0] * x[0]
			}
		}
		mean := s / n
		sd := math.Sqrt(s2/n - mean*mean)
		if math.Abs(mean-tc.mean) > tc.tol || math.Abs(sd-tc.sd) > tc.tol {
			t.Errorf("%s: mean %.4f sd %.4f, want %.4f and %.4f (±%g)", tc.name, mean, sd, tc.mean, tc.sd, tc.tol)
		}
	}
}

// The hyperparameter sampler on a GP's posterior: each draw stays within
// the priors' bounds, and the lengthscale of a 1-D GP's samples spreads
// around the MAP estimate (the posterior is not a point).
func TestHyperSamplesWithinBoundsAndSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 12
	xs := make([][]float64, n)
	y := make([]float64, n)
	cnt := make([]float64, n)
	for i := range xs {
		xs[i] = []float64{rng.Float64()}
		y[i] = math.Sin(6 * xs[i][0])
		cnt[i] = 1
	}
	y = standardize(y)
	pr := newPriors(1)
	f := newFitData(xs, cnt, y, []bool{false}, pr)
	theta, _ := fitHyper(f, []hyper{pr.defaultHyper()}, 60)
	h := &hyperMC{n: 200, burnFirst: 20, burn: 0, thin: 1, baseN: -1, rng: rand.New(rand.NewPCG(5, 6))}
	h.sample(f, theta)
	if len(h.samples) != 200 {
		t.Fatalf("%d samples, want 200", len(h.samples))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range h.samples {
		for i, v := range s {
			if v < pr.lo[i] || v > pr.hi[i] {
				t.Fatalf("sample %v outside the bounds [%v, %v] at %d", s, pr.lo[i], pr.hi[i], i)
			}
		}
		lo, hi = min(lo, s[0]), max(hi, s[0])
	}
	if !(lo < theta[0] && theta[0] < hi) || hi-lo < 0.1 {
		t.Errorf("log lengthscale samples in [%.3f, %.3f], MAP %.3f: want a spread around it", lo, hi, theta[0])
	}
}

// The integrated acquisition of S equal posteriors is the single one's
// log EI and gradient; of different posteriors, the log of their EIs'
// mean, with the gradient of that (central differences).
func TestIntegratedEI(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cat := []bool{false, false}
	n := 10
	xs := make([][]float64, n)
	y := make([]float64, n)
	cnt := make([]float64, n)
	for i := range xs {
		xs[i] = []float64{rng.Float64(), rng.Float64()}
		y[i] = (xs[i][0]-0.3)*(xs[i][0]-0.3) + 2*(xs[i][1]-0.6)*(xs[i][1]-0.6)
		cnt[i] = 1
	}
	y = standardize(y)
	mk := func(l0, l1 float64) *gp {
		g := newGP(cat, hyper{math.Log(l0), math.Log(l1), 0, math.Log(1e-4)})
		if err := g.setData(xs, cnt, y); err != nil {
			t.Fatal(err)
		}
		return g
	}
	part := func(g *gp) acqPart {
		return acqPart{g: g, best: incumbent(g), dmu: make([]float64, 2), dv: make([]float64, 2), grad: make([]float64, 2)}
	}
	newAcq := func(g *gp, gs ...*gp) *acq {
		a := &acq{g: g, best: incumbent(g), dmu: make([]float64, 2), dv: make([]float64, 2), grad: make([]float64, 2)}
		for _, gi := range gs {
			a.parts = append(a.parts, part(gi))
		}
		a.pv, a.pw = make([]float64, len(gs)), make([]float64, len(gs))
		return a
	}
	g := mk(0.3, 0.5)
	single := newAcq(g)
	same := newAcq(g, g, mk(0.3, 0.5), mk(0.3, 0.5), g)
	dims := []int{0, 1}
	for range 20 {
		x := []float64{rng.Float64(), rng.Float64()}
		f1 := single.valueGrad(x, dims)
		g1 := slices.Clone(single.grad)
		f4 := same.valueGrad(x, dims)
		if math.Abs(f1-f4) > 1e-12 || math.Abs(single.valueX(x)-same.valueX(x)) > 1e-12 {
			t.Fatalf("at %v: integrated log EI of equal samples %v, single %v", x, f4, f1)
		}
		for j := range dims {
			if math.Abs(g1[j]-same.grad[j]) > 1e-9*max(1, math.Abs(g1[j])) {
				t.Fatalf("at %v: gradient %v, single %v", x, same.grad, g1)
			}
		}
	}
	gs := []*gp{mk(0.1, 0.2), mk(0.3, 0.5), mk(1, 2)}
	mix := newAcq(gs[1], gs...)
	for range 20 {
		x := []float64{0.05 + 0.9*rng.Float64(), 0.05 + 0.9*rng.Float64()}
		want := 0.0
		for _, gi := range gs {
			mu, v := gi.predict(x)
			want += math.Exp(logEI(incumbent(gi), mu, v)) / 3
		}
		got := mix.valueGrad(x, dims)
		if math.Abs(got-math.Log(want)) > 1e-9*max(1, math.Abs(got)) {
			t.Fatalf("at %v: integrated log EI %v, want log of the mean EI %v", x, got, math.Log(want))
		}
		grad := slices.Clone(mix.grad)
		for j := range dims {
			p, m := shifted(x, j, 1e-6)
			fd := (mix.valueX(p) - mix.valueX(m)) / 2e-6
			if math.Abs(fd-grad[j]) > 1e-4*max(1, math.Abs(fd)) {
				t.Errorf("at %v: d/dx%d %v, central difference %v", x, j, grad[j], fd)
			}
		}
	}
}

// searchHyper runs n suggestions on the bowl with hyperparameter samples
// (s of them; 0: the MAP fit) and returns them.
func searchHyper(t *testing.T, seed int64, s, n int) ([]tunables.Point, *Optimizer) {
	t.Helper()
	o, err := New(bowlDims(), Options{Seed: seed, MaxTrials: 40})
	if err != nil {
		t.Fatal(err)
	}
	if s > 0 {
		if err := o.SetHyperSamples(s, 10, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	var out []tunables.Point
	for range n {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pts[0])
		if err := o.Observe(Observation{X: pts[0], Y: []float64{sharpBowl(pts[0])}}); err != nil {
			t.Fatal(err)
		}
	}
	return out, o
}

// With samples the search is deterministic per seed, differs from the
// MAP fit's, and still finds the bowl's minimum; the samples differ.
func TestHyperSamplesSearch(t *testing.T) {
	a, oa := searchHyper(t, 11, 4, 25)
	b, _ := searchHyper(t, 11, 4, 25)
	m, _ := searchHyper(t, 11, 0, 25)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("suggestion %d: %v then %v with the same seed", i, a[i], b[i])
		}
	}
	if slices.EqualFunc(a, m, func(p, q tunables.Point) bool { return slices.Equal(p, q) }) {
		t.Error("the samples changed no suggestion")
	}
	ls, sig2, noise := oa.HyperSamples()
	if len(ls) != 4 || len(sig2) != 4 || len(noise) != 4 {
		t.Fatalf("%d samples, want 4", len(ls))
	}
	if slices.Equal(ls[0], ls[1]) && slices.Equal(ls[1], ls[2]) {
		t.Errorf("equal samples %v", ls)
	}
	best, ok := oa.Best()
	if !ok || best.Y[0] > 0.01 {
		t.Errorf("best %v after 25 evaluations of the bowl, want below 0.01", best.Y)
	}
	if ls, _, _ := func() ([][]float64, []float64, []float64) { _, o := searchHyper(t, 11, 0, 3); return o.HyperSamples() }(); ls != nil {
		t.Errorf("samples %v without SetHyperSamples", ls)
	}
}

func TestSetHyperSamplesErrors(t *testing.T) {
	o, err := New(bowlDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][4]int{{-1, 1, 1, 1}, {4, -1, 0, 1}, {4, 1, -1, 1}, {4, 1, 1, 0}} {
		if err := o.SetHyperSamples(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("SetHyperSamples%v: no error", bad)
		}
	}
	_, fitted := searchHyper(t, 1, 0, 8)
	if err := fitted.SetHyperSamples(4, 1, 1, 1); err == nil {
		t.Error("after the first fit: no error")
	}
	two, err := New(bowlDims(), Options{Seed: 1, NumObjectives: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := two.SetHyperSamples(4, 1, 1, 1); err == nil {
		t.Error("two objectives: no error")
	}
}

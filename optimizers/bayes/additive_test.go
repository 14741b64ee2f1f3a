package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// addData is an additive function of three inputs (two numeric, one
// categorical) with noise.
func addData(n int, seed uint64) ([][]float64, []float64, []float64, []bool) {
	rng := rand.New(rand.NewPCG(seed, 3))
	xs, cnt, y := mixedPoints(rng, n, func(x []float64) (float64, float64) {
		return math.Sin(6*x[0]) + math.Cos(5*x[1]) + 0.3*x[2] + 0.05*rng.NormFloat64(), float64(1 + rng.IntN(2))
	})
	return xs, cnt, standardize(y), mixedCat()
}

func TestAdditiveNegLogPostGradient(t *testing.T) {
	xs, cnt, y, cat := addData(30, 5)
	f := newFitData(xs, cnt, y, cat, addPriors(newPriors(3), 3))
	for _, th := range []hyper{
		{math.Log(0.3), math.Log(0.7), math.Log(1.5), 0.2, math.Log(1e-2), 0.4, math.Log(0.2), math.Log(0.5), math.Log(2)},
		{math.Log(1.1), math.Log(0.2), math.Log(0.05), -0.5, math.Log(0.3), -2, math.Log(0.9), math.Log(0.1), math.Log(0.3)},
		{math.Log(0.4), math.Log(0.2), math.Log(0.5), -0.5, math.Log(0.3), 9, math.Log(0.3), math.Log(0.3), math.Log(0.3)}, // ρ beyond its bound
	} {
		checkNegLogPostGrad(t, f, th)
	}
}

// TestAdditivePosterior checks the model with the additive part: the
// incremental factor equals the direct one, predictGrad's gradients match
// finite differences, the prior variance is σ_f², and ρ = 1 gives the
// kernel of a sum of one-dimensional kernels.
func TestAdditivePosterior(t *testing.T) {
	xs, cnt, y, cat := addData(25, 7)
	th := append(testTheta(), 0.7, math.Log(0.2), math.Log(0.6), math.Log(1.1))
	g := newGPAdd(cat, th, true)
	if g.rho == 0 || math.Abs(g.rho-sigmoid(0.7)) > 1e-15 {
		t.Fatalf("ρ = %v, want %v", g.rho, sigmoid(0.7))
	}
	if err := g.setData(xs, cnt, y); err != nil {
		t.Fatal(err)
	}
	inc := newGPAdd(cat, th, true)
	setDataIncremental(t, inc, xs, cnt, y, 15)
	for _, q := range [][]float64{{0.3, 0.7, 0}, {0.9, 0.1, 2}, {0.51, 0.49, 1}} {
		mu0, v0 := g.predict(q)
		mu1, v1 := inc.predict(q)
		if math.Abs(mu0-mu1) > 1e-8 || math.Abs(v0-v1) > 1e-8 {
			t.Errorf("incremental (%v, %v) != direct (%v, %v)", mu1, v1, mu0, v0)
		}
		checkPredictGrad(t, g, q, []int{0, 1})
	}
	a, b := []float64{0.2, 0.9, 1}, []float64{0.6, 0.9, 2}
	if k := g.base(a, a); math.Abs(k-g.sig2) > 1e-12 {
		t.Errorf("k(a, a) = %v, want σ_f² = %v", k, g.sig2)
	}
	full := newGP(cat, append(slices.Clone(th[6:9]), th[3:5]...))
	g.rho = 1
	want := 0.0
	for d := range 3 {
		p := []float64{0, 0, 0}
		q := []float64{0, 0, 0}
		p[d], q[d] = a[d], b[d]
		want += full.base(p, q)
	}
	if got := g.base(a, b); math.Abs(got-want/3) > 1e-12 {
		t.Errorf("ρ = 1: k = %v, want the mean of the one-dimensional kernels %v", got, want/3)
	}
}

// TestAdditiveFitsShare: on an additive function the fit takes most of
// the kernel from the additive part; the optimizer's Additive reports it,
// suggestions stay in the box, and turning it off restores the plain
// priors. With a fidelity it is refused.
func TestAdditiveFitsShare(t *testing.T) {
	var dims []tunables.Dim
	for _, n := range []string{"a", "b", "c", "d"} {
		dims = append(dims, tunables.Dim{Name: n, Tunable: n, Kind: tunables.DimNumeric})
	}
	o, err := New(dims, Options{Seed: 3, MaxTrials: 40})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetAdditive(true); err != nil {
		t.Fatal(err)
	}
	f := func(p tunables.Point) float64 {
		s := 0.0
		for _, x := range p {
			s += math.Sin(7*x) + 2*x*x
		}
		return s
	}
	for range 30 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{f(pts[0])}}); err != nil {
			t.Fatal(err)
		}
	}
	on, rho := o.Additive()
	if !on || rho < 0.7 {
		t.Errorf("Additive() = %v, %v: want the additive share above 0.7 on an additive function", on, rho)
	}
	if err := o.SetAdditive(false); err != nil {
		t.Fatal(err)
	}
	if on, _ := o.Additive(); on || len(o.pr.mu) != len(dims)+2 || o.pr.add {
		t.Errorf("after SetAdditive(false): on %v, %d priors", on, len(o.pr.mu))
	}
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	o2, err := New(dims, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if err := o2.SetAdditive(true); err == nil {
		t.Error("SetAdditive with a fidelity: no error")
	}
}

// TestAdditiveSelect: SetAdditiveSelect's fit keeps the mixture on an
// additive function (its evidence beats the plain kernel's by more than
// the penalty) and the plain kernel on a function of x0 + x1 alone, which
// the plain kernel describes with two lengthscales.
func TestAdditiveSelect(t *testing.T) {
	var dims []tunables.Dim
	for _, n := range []string{"a", "b", "c"} {
		dims = append(dims, tunables.Dim{Name: n, Tunable: n, Kind: tunables.DimNumeric})
	}
	o, err := New(dims, Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	o.SetAdditiveSelect(true)
	if err := o.SetAdditive(true); err != nil {
		t.Fatal(err)
	}
	xs, cnt, y, _ := addData(30, 9)
	for i := range xs {
		xs[i][2] /= 2
	}
	if th := o.fitSelect(xs, cnt, y, o.pr); len(th) != 2*3+3 {
		t.Errorf("additive function: θ of %d entries, want the mixture's 9", len(th))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range xs {
		y[i] = math.Sin(4*(xs[i][0]+xs[i][1])) + 0.01*rng.NormFloat64()
	}
	if th := o.fitSelect(xs, cnt, standardize(y), o.pr); len(th) != 3+2 {
		t.Errorf("sin(4(x0 + x1)): θ of %d entries, want the plain kernel's 5", len(th))
	}
}

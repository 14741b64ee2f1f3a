package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
	"gonum.org/v1/gonum/mat"
)

// ftkPoints draws configurations of 2 knobs, each observed at a few
// fidelities (the last coordinate), some configurations repeated.
func ftkPoints(rng *rand.Rand, nCfg int) [][]float64 {
	var xs [][]float64
	for range nCfg {
		a, b := rng.Float64(), rng.Float64()
		for _, u := range []float64{0, 0.25, 0.5, 1}[:1+rng.IntN(4)] {
			xs = append(xs, []float64{a, b, u})
		}
	}
	return xs
}

// TestFTKPositiveSemiDefinite: the kernel with the curve term gives a
// positive semi-definite matrix on random inputs (configurations at
// several fidelities), over a range of hyperparameters.
func TestFTKPositiveSemiDefinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cat := []bool{false, false, false}
	for trial := range 20 {
		xs := ftkPoints(rng, 15)
		th := hyper{rng.NormFloat64() - 1, rng.NormFloat64() - 1, rng.NormFloat64(), rng.NormFloat64(), -9}
		g := newGP(cat, th)
		g.ft = &ftkGP{fi: 2, s2: math.Exp(2 * rng.NormFloat64()), al: math.Exp(rng.NormFloat64()), beta: math.Exp(rng.NormFloat64() - 1)}
		n := len(xs)
		k := mat.NewSymDense(n, nil)
		for i := range n {
			for j := range i + 1 {
				k.SetSym(i, j, g.kern(xs[i], xs[j]))
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(k, false) {
			t.Fatalf("trial %d: eigendecomposition failed", trial)
		}
		vals := eig.Values(nil)
		scale := g.sig2 + g.ft.s2
		if vals[0] < -1e-9*scale*float64(n) {
			t.Fatalf("trial %d: smallest eigenvalue %v (largest %v): not PSD", trial, vals[0], vals[n-1])
		}
		// The curve term alone is nonzero only within a configuration.
		if xs[0][0] != xs[n-1][0] && g.curve(xs[0], xs[n-1]) != 0 {
			t.Fatal("curve term between different configurations")
		}
	}
}

// TestFTKNegLogPostGradient: the analytic gradient, the curve term's three
// hyperparameters included, matches finite differences.
func TestFTKNegLogPostGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	xs := ftkPoints(rng, 12)
	y := make([]float64, len(xs))
	cnt := make([]float64, len(xs))
	for i, x := range xs {
		y[i] = x[0] + 0.5*x[1] + (0.3+x[0])*math.Exp(-3*x[2]) + 0.02*rng.NormFloat64()
		cnt[i] = 1
	}
	pr := newPriors(3)
	pr.mu = append(pr.mu, ftkSigMu, ftkAMu, ftkBMu)
	pr.sd = append(pr.sd, ftkSigSD, ftkASD, ftkBSD)
	pr.lo = append(pr.lo, math.Log(ftkSigLo), math.Log(ftkALo), math.Log(ftkBLo))
	pr.hi = append(pr.hi, math.Log(ftkSigHi), math.Log(ftkAHi), math.Log(ftkBHi))
	pr.ftk = &ftkSpec{fi: 2}
	f := newFitData(xs, cnt, standardize(y), []bool{false, false, false}, pr)
	for _, th := range []hyper{
		{math.Log(0.3), math.Log(0.7), math.Log(1.5), 0.2, math.Log(1e-2), -1, 0.3, -1},
		{math.Log(1.1), math.Log(0.2), math.Log(0.5), -0.5, math.Log(0.3), 0.5, -0.5, 0.2},
		{math.Log(1.1), math.Log(0.2), math.Log(0.5), -0.5, math.Log(0.3), 5, -0.5, 0.2}, // beyond σ_h²'s bound
	} {
		checkNegLogPostGrad(t, f, th)
	}
}

// plCurve is a synthetic power-law learning curve: configuration (a, b)
// has the asymptote eInf and reaches eInf + amp·(1+r)^(-0.8) at r epochs
// (1 to 81); amp varies between configurations independently of eInf, so
// a short run's value says little about the asymptote unless the curve's
// shape is extrapolated.
func plCurve(p tunables.Point, r float64) float64 {
	eInf := 0.2 + 0.3*(p[0]-0.6)*(p[0]-0.6) + 0.2*(p[1]-0.3)*(p[1]-0.3)
	amp := 0.5 + 1.5*math.Abs(math.Sin(7*p[0]+11*p[1]))
	return eInf + amp*math.Pow(1+r, -0.8)
}

// TestFTKExtrapolatesPowerLawCurves: configurations observed along their
// first epochs (1, 3, 9 of 81; log-scale coordinate) and a few observed to
// 81: the decay kernel's prediction at full fidelity of the configurations
// run only briefly is closer to their value at 81 epochs than the
// stationary kernel's.
func TestFTKExtrapolatesPowerLawCurves(t *testing.T) {
	coord := func(r float64) float64 { return math.Log(r) / math.Log(81) }
	var errStat, errDecay float64
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 41))
		var obs []Observation
		var short []tunables.Point
		for i := range 30 {
			p := tunables.Point{rng.Float64(), rng.Float64(), 0}
			rs := []float64{1, 3, 9}
			if i < 6 {
				rs = []float64{1, 3, 9, 27, 81}
			} else {
				short = append(short, p)
			}
			for _, r := range rs {
				q := tunables.Point{p[0], p[1], coord(r)}
				obs = append(obs, Observation{X: q, Y: []float64{plCurve(q, r) + 0.002*rng.NormFloat64()}})
			}
		}
		rmse := func(kernel string) float64 {
			o, err := New(fidDims()[1:], Options{Seed: int64(seed), NoOutputWarping: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.SetFidelity(2, 1); err != nil {
				t.Fatal(err)
			}
			if err := o.SetFidelityKernel(kernel); err != nil {
				t.Fatal(err)
			}
			if err := o.Observe(obs...); err != nil {
				t.Fatal(err)
			}
			pred, _, ok, err := o.PredictFull(short, false)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			var truth, means []float64
			for _, p := range short {
				truth = append(truth, plCurve(p, 81))
			}
			for _, pr := range pred {
				means = append(means, pr.Mean)
			}
			return affineRMSE(t, o, means, truth)
		}
		s, d := rmse(FidelityKernelStationary), rmse(FidelityKernelDecay)
		t.Logf("seed %d: RMSE at 81 epochs: stationary %.4f, decay %.4f", seed, s, d)
		errStat += s
		errDecay += d
	}
	if errDecay >= errStat {
		t.Errorf("decay kernel's extrapolation error %.4f, stationary %.4f: want the decay kernel closer", errDecay/3, errStat/3)
	}
}

// affineRMSE maps model-scale means back to the objective (without output
// warping the targets are the debiased values standardized, and debiasing
// leaves full fidelity unchanged) and returns the RMSE against truth.
func affineRMSE(t *testing.T, o *Optimizer, means, truth []float64) float64 {
	t.Helper()
	o.mu.Lock()
	v := o.debias(o.rawTargets(nil))
	o.mu.Unlock()
	n := float64(len(v))
	mean, ss := 0.0, 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / n)
	s := 0.0
	for i, m := range means {
		e := mean + sd*m - truth[i]
		s += e * e
	}
	return math.Sqrt(s / float64(len(means)))
}

func TestSetFidelityKernelErrors(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelityKernel("decay"); err == nil || !strings.Contains(err.Error(), "SetFidelity first") {
		t.Errorf("before SetFidelity: %v", err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelityKernel("exp"); err == nil || !strings.Contains(err.Error(), `unknown fidelity kernel "exp"`) {
		t.Errorf("unknown kernel: %v", err)
	}
	if o.FidelityKernel() != FidelityKernelStationary {
		t.Errorf("default kernel %q", o.FidelityKernel())
	}
	for _, k := range []string{"decay", "decay", "stationary", "decay"} {
		if err := o.SetFidelityKernel(k); err != nil {
			t.Fatal(err)
		}
		if o.FidelityKernel() != k {
			t.Errorf("kernel %q after setting %q", o.FidelityKernel(), k)
		}
	}
	// Suggestions work with it, at full fidelity.
	rng := rand.New(rand.NewPCG(1, 2))
	var obs []Observation
	for range 20 {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), float64(rng.IntN(2))}
		obs = append(obs, Observation{X: p, Y: []float64{fidF(p, rng)}})
	}
	if err := o.Observe(obs...); err != nil {
		t.Fatal(err)
	}
	pts, err := o.Suggest(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if p[3] != 1 {
			t.Errorf("suggestion %v not at full fidelity", p)
		}
	}
	if len(o.theta) != 4+5 {
		t.Errorf("θ has %d entries, want 9 (with the curve term's 3)", len(o.theta))
	}
}

// TestSetFidelityKernelRestoresPriors: "decay" holds the fidelity's
// lengthscale at its upper bound and adds three hyperparameters;
// "stationary" gives the default priors back exactly.
func TestSetFidelityKernelRestoresPriors(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	mu, lo, hi := slices.Clone(o.pr.mu), slices.Clone(o.pr.lo), slices.Clone(o.pr.hi)
	if err := o.SetFidelityKernel("decay"); err != nil {
		t.Fatal(err)
	}
	if len(o.pr.mu) != len(mu)+3 || o.pr.lo[3] != o.pr.hi[3] || o.pr.mu[3] != o.pr.hi[3] {
		t.Errorf("decay priors: mu %v lo %v hi %v", o.pr.mu, o.pr.lo, o.pr.hi)
	}
	if err := o.SetFidelityKernel("stationary"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.pr.mu, mu) || !slices.Equal(o.pr.lo, lo) || !slices.Equal(o.pr.hi, hi) {
		t.Errorf("priors not restored: mu %v lo %v hi %v", o.pr.mu, o.pr.lo, o.pr.hi)
	}
}

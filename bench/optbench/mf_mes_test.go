package main

import (
	"math"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/benchtune/bench/optimizers/bayes"
)

// mesGainDirect is mesGain by its definition: the entropy of u ~ N(0, 1)
// minus the entropy of u given z ≤ γ ((u, z) standard bivariate normal
// with correlation ρ), the latter by a fine trapezoid over u of
// −p log p, p(u) = φ(u)Φ((γ − ρu)/√(1−ρ²))/Φ(γ).
func mesGainDirect(gamma, rho float64) float64 {
	s := math.Sqrt(1 - rho*rho)
	pg := math.Exp(logPhi(gamma))
	const lo, hi, n = -14.0, 14.0, 200000
	h := (hi - lo) / n
	ent := 0.0
	for i := 0; i <= n; i++ {
		u := lo + float64(i)*h
		lp := -u*u/2 - 0.5*math.Log(2*math.Pi) + logPhi((gamma-rho*u)/s) - math.Log(pg)
		w := 1.0
		if i == 0 || i == n {
			w = 0.5
		}
		if p := math.Exp(lp); p > 0 {
			ent -= w * p * lp * h
		}
	}
	return 0.5*math.Log(2*math.Pi*math.E) - ent
}

// TestMESGain: the information gain agrees with the entropies computed
// directly (within 1e-4 nats, or 1%), is 0 at correlation 0, grows with
// the correlation, is MES's closed form γλ/2 − log Φ(γ) at correlation 1
// and never exceeds it, falls as γ grows (a configuration whose mean is
// far above f* tells little about it), and is symmetric in the sign of ρ.
func TestMESGain(t *testing.T) {
	mes := func(g float64) float64 {
		lp := logPhi(g)
		return g*math.Exp(-g*g/2-0.5*math.Log(2*math.Pi)-lp)/2 - lp
	}
	for _, g := range []float64{-3, -1, 0, 0.5, 1, 2, 4} {
		if v := mesGain(g, 0); v != 0 {
			t.Errorf("γ %v, ρ 0: gain %v, want 0", g, v)
		}
		if v, want := mesGain(g, 1), mes(g); math.Abs(v-want) > 1e-12 {
			t.Errorf("γ %v, ρ 1: gain %v, want MES's %v", g, v, want)
		}
		prev := 0.0
		for _, r := range []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999} {
			v := mesGain(g, r)
			d := mesGainDirect(g, r)
			if math.Abs(v-d) > max(1e-4, 0.01*d) {
				t.Errorf("γ %v, ρ %v: gain %v, direct %v", g, r, v, d)
			}
			if v < prev-1e-9 {
				t.Errorf("γ %v: gain %v at ρ %v below %v at a lower ρ", g, v, r, prev)
			}
			if v > mes(g)+1e-9 {
				t.Errorf("γ %v, ρ %v: gain %v above MES's %v", g, r, v, mes(g))
			}
			if n := mesGain(g, -r); math.Abs(n-v) > 1e-12 {
				t.Errorf("γ %v: gain %v at ρ %v, %v at −ρ", g, v, r, n)
			}
			prev = v
		}
	}
	for _, r := range []float64{0.5, 0.9, 1} {
		prev := math.Inf(1)
		for _, g := range []float64{-2, -1, 0, 1, 2, 3, 5, 8} {
			v := mesGain(g, r)
			if v > prev+1e-12 {
				t.Errorf("ρ %v: gain %v at γ %v above %v at a lower γ", r, v, g, prev)
			}
			prev = v
		}
	}
	if v := mesGain(math.NaN(), 0.5); v != 0 {
		t.Errorf("NaN γ: %v", v)
	}
}

// TestMESAcq: the acquisition is 0 where the full-fidelity posterior has
// no variance (the value is known: nothing to learn about f*), grows with
// the posterior SD at fixed mean and f* samples, and at a lower fidelity
// shrinks as the correlation with full fidelity (the covariance), or the
// noise, takes away from it.
func TestMESAcq(t *testing.T) {
	fstar := []float64{-2.1, -1.8, -1.5}
	at := func(sd, corr float64, full bayes.Prediction) bayes.PairAt {
		return bayes.PairAt{Mean: full.Mean, SD: sd, Cov: corr * sd * full.SD}
	}
	known := bayes.Prediction{Mean: -1, SD: 0}
	if v := mesAcq(known, bayes.PairAt{Mean: -1, SD: 0.5, Cov: 0}, 0.01, fstar); v != 0 {
		t.Errorf("SD 0: acquisition %v, want 0", v)
	}
	prev := 0.0
	for _, sd := range []float64{0.1, 0.3, 1, 3} {
		full := bayes.Prediction{Mean: -1, SD: sd}
		v := mesAcq(full, at(sd, 1, full), 0, fstar)
		if !(v > prev) {
			t.Errorf("SD %v: acquisition %v, not above %v at a lower SD", sd, v, prev)
		}
		prev = v
	}
	full := bayes.Prediction{Mean: -1, SD: 0.5}
	prev = math.Inf(1)
	for _, c := range []float64{1, 0.9, 0.7, 0.4, 0.1, 0} {
		v := mesAcq(full, at(0.5, c, full), 0, fstar)
		if c == 0 && v != 0 {
			t.Errorf("correlation 0: acquisition %v, want 0", v)
		}
		if c < 1 && !(v < prev) && !(c == 0 && v == 0) {
			t.Errorf("correlation %v: acquisition %v, not below %v at the previous, higher correlation", c, v, prev)
		}
		prev = v
	}
	// Noise lowers the observation's correlation with the full value.
	clean := mesAcq(full, at(0.5, 0.9, full), 0, fstar)
	noisy := mesAcq(full, at(0.5, 0.9, full), 0.25, fstar)
	if !(noisy < clean) {
		t.Errorf("noise 0.25: acquisition %v, not below %v without noise", noisy, clean)
	}
}

// TestMFSplitMES: the -mfmes part is found anywhere and removed.
func TestMFSplitMES(t *testing.T) {
	for _, c := range []struct {
		in, out string
		on      bool
	}{
		{"asha-gp-fid-min3-mfmes", "asha-gp-fid-min3", true},
		{"asha-gp-fid-min3-mfmes-eta9", "asha-gp-fid-min3-eta9", true},
		{"hb-gp-fid", "hb-gp-fid", false},
		{"asha-gp-fid-mfmesx", "asha-gp-fid-mfmesx", false},
	} {
		out, o := mfSplitMES(c.in)
		if out != c.out || o.on != c.on || o.local {
			t.Errorf("%q: %q %v, want %q %v", c.in, out, o.on, c.out, c.on)
		}
	}
}

// TestMFSplitMESLocal: -mfmesl is the local form; a second MF-MES part
// is left in the name (and refused as an unknown method).
func TestMFSplitMESLocal(t *testing.T) {
	out, o := mfSplitMES("asha-gp-fid-min3-mfmesl-eta9")
	if out != "asha-gp-fid-min3-eta9" || !o.on || !o.local {
		t.Errorf("-mfmesl: %q %+v", out, o)
	}
	if out, _ := mfSplitMES("asha-gp-fid-mfmes-mfmesl"); out != "asha-gp-fid-mfmesl" {
		t.Errorf("two MF-MES parts: %q", out)
	}
	if _, err := mfRun(lcnetProblem(50), "asha-gp-fid-mfmes-mfmesl", true, 1, 10); err == nil {
		t.Error("two MF-MES parts were accepted")
	}
}

// TestMFMESRun: an -mfmes method runs on lcnet (a short budget), is
// deterministic per seed, starts configurations at the fidelities the
// planner offers (its lowest rung, or full fidelity), and is refused with
// the proposal rules it does not combine with.
func TestMFMESRun(t *testing.T) {
	p := lcnetProblem(50)
	run := func() (mfTrace, error) { return mfRun(p, "asha-gp-fid-min3-mfmes", true, 3, 300) }
	a, err := run()
	if err != nil {
		t.Fatal(err)
	}
	b, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if a.evals == 0 || a.evals != b.evals || !slices.Equal(a.cost, b.cost) || !slices.Equal(a.quality, b.quality) {
		t.Errorf("two runs differ or ran nothing: %d/%d evaluations, costs %v / %v", a.evals, b.evals, a.cost, b.cost)
	}
	for _, j := range a.jobs {
		if j.r != 3 && j.r != 9 && j.r != 27 && j.r != 81 {
			t.Errorf("a run at fidelity %v, not a rung of 3, 9, 27, 81", j.r)
		}
	}
	for _, m := range []string{"asha-gp-fid-min3-mfmes-turbo50", "asha-gp-fid-min3-start50-mfmes", "hb-random-mfmes", "asha-gp-mfacq-mfmes"} {
		if _, err := mfRun(p, m, true, 3, 50); err == nil {
			t.Errorf("%q was accepted", m)
		}
	}
}

// TestMFStopAtTarget: a run told to stop at a quality (-mf-stop-at-target)
// reaches it at the same cost as the whole run, and ends there.
func TestMFStopAtTarget(t *testing.T) {
	p := curveProblem(braninProblem(), 27, 12)
	limit := float64(p.budget) * p.max
	whole, err := mfRun(p, "asha-gp-fid", true, 2, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.quality) < 2 {
		t.Fatalf("too few improvements to test: %v", whole.quality)
	}
	target := whole.quality[len(whole.quality)/2]
	p.stop, p.stopAt = true, target
	cut, err := mfRun(p, "asha-gp-fid", true, 2, limit)
	if err != nil {
		t.Fatal(err)
	}
	if cut.reach(target) != whole.reach(target) {
		t.Errorf("reached at %v when stopping, %v in the whole run", cut.reach(target), whole.reach(target))
	}
	if cut.final() > target || cut.evals >= whole.evals {
		t.Errorf("stopped run: last quality %v (target %v), %d runs (whole run %d)", cut.final(), target, cut.evals, whole.evals)
	}
}

// TestMFMESDiag (run only with BENCH_MFMES_DIAG=seeds, e.g. 10): where
// asha-gp-fid-min3-mfmes starts its configurations on lcnet and which
// part of the candidates it picks, within a fifth of the budget (810
// epochs), seeds 1..N; it prints, and asserts only that it ran.
func TestMFMESDiag(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BENCH_MFMES_DIAG"))
	if n <= 0 {
		t.Skip("BENCH_MFMES_DIAG=seeds runs it")
	}
	defer func() { mfMESDone = nil }()
	var last *mfMES
	mfMESDone = func(m *mfMES) { last = m }
	p := lcnetProblem(50)
	tot := map[float64]int{}
	var picked [3]int
	for s := 1; s <= n; s++ {
		last = nil
		if _, err := mfRun(p, "asha-gp-fid-min3-mfmes", true, int64(s), 810); err != nil {
			t.Fatal(err)
		}
		if last == nil {
			t.Fatal("no -mfmes state")
		}
		t.Logf("seed %d: starts by fidelity %v; picked gp-fid proposal %d, random %d, perturbation %d", s, last.starts, last.picked[0], last.picked[1], last.picked[2])
		for k, v := range last.starts {
			tot[k] += v
		}
		for i := range picked {
			picked[i] += last.picked[i]
		}
	}
	t.Logf("all %d seeds: starts by fidelity %v; picked gp-fid proposal %d, random %d, perturbation %d", n, tot, picked[0], picked[1], picked[2])
}

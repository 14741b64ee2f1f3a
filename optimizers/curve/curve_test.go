package curve

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func steps(n int) []float64 {
	t := make([]float64, n)
	for i := range t {
		t[i] = float64(i + 1)
	}
	return t
}

// TestRecoversExactCurves: noise-free curves of each shape, observed on
// their first third, are extrapolated to the horizon within a small share
// of their total change, and the truth lies within a few SDs.
func TestRecoversExactCurves(t *testing.T) {
	const h = 81.0
	cases := []struct {
		name string
		f    func(t float64) float64
	}{
		// the lcnet shape: e∞ + (0.9 − e∞)/(1 + t/τ)^0.8
		{"pow4-like", func(t float64) float64 { return 0.12 + 0.78*math.Pow(1+t/4, -0.8) }},
		{"pow3", func(t float64) float64 { return 0.3 + 0.5*math.Pow(t, -0.7) }},
		{"exp", func(t float64) float64 { return 2 - 1.5*math.Exp(-t/9) }},
		{"weibull", func(t float64) float64 { return 10 + 5*math.Exp(-math.Pow(t/12, 2)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := steps(27)
			ys := make([]float64, len(ts))
			for i, s := range ts {
				ys[i] = c.f(s)
			}
			m, err := Fit(ts, ys, h, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := m.Predict(h)
			want := c.f(h)
			change := math.Abs(c.f(h) - c.f(1))
			if math.Abs(p.Mean-want) > 0.03*change {
				t.Errorf("predicted %.5f ± %.5f at %g, want %.5f (total change %.4f)", p.Mean, p.SD, h, want, change)
			}
			if p.SD < 0 || math.IsNaN(p.SD) {
				t.Errorf("SD %v", p.SD)
			}
			// Within the data the fit is close too.
			if q := m.Predict(10); math.Abs(q.Mean-c.f(10)) > 0.01*change {
				t.Errorf("at 10: %.5f, want %.5f", q.Mean, c.f(10))
			}
		})
	}
}

// TestNoisyCurveCoverage: on noisy curves the 2-SD interval of the
// prediction at the horizon covers the truth most of the time, and the
// SD shrinks as more of the curve is seen.
func TestNoisyCurveCoverage(t *testing.T) {
	const h = 81.0
	rng := rand.New(rand.NewPCG(1, 2))
	covered, trials := 0, 0
	var sdShort, sdLong float64
	for range 40 {
		e := 0.05 + 0.2*rng.Float64()
		tau := 1 + 10*rng.Float64()
		f := func(t float64) float64 { return e + (0.9-e)*math.Pow(1+t/tau, -0.8) }
		obs := func(n int) ([]float64, []float64) {
			ts := steps(n)
			ys := make([]float64, n)
			for i, s := range ts {
				ys[i] = f(s) + (0.004+0.03/(1+s/2))*rng.NormFloat64()
			}
			return ts, ys
		}
		ts, ys := obs(27)
		m, err := Fit(ts, ys, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := m.Predict(h)
		if math.Abs(p.Mean-f(h)) <= 2*p.SD {
			covered++
		}
		trials++
		sdLong += p.SD
		ts, ys = obs(9)
		m, err = Fit(ts, ys, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sdShort += m.Predict(h).SD
	}
	if covered < trials*6/10 {
		t.Errorf("2-SD interval covered the truth in %d of %d curves", covered, trials)
	}
	if sdShort <= sdLong {
		t.Errorf("mean SD from 9 steps %.4f, from 27 steps %.4f: want more uncertainty from fewer steps", sdShort/40, sdLong/40)
	}
}

// TestDegenerateInput: what cannot be fitted is refused with an error,
// and what can (constant curves, repeated steps, huge or tiny values)
// gives finite predictions.
func TestDegenerateInput(t *testing.T) {
	bad := []struct {
		name string
		t, y []float64
		h    float64
		opt  Options
	}{
		{"empty", nil, nil, 10, Options{}},
		{"two steps", []float64{1, 2}, []float64{1, 0.5}, 10, Options{}},
		{"repeated steps only", []float64{1, 1, 2, 2}, []float64{1, 1.1, 0.5, 0.6}, 10, Options{}},
		{"lengths differ", []float64{1, 2, 3}, []float64{1, 2}, 10, Options{}},
		{"NaN value", []float64{1, 2, 3}, []float64{1, math.NaN(), 2}, 10, Options{}},
		{"Inf value", []float64{1, 2, 3}, []float64{1, math.Inf(1), 2}, 10, Options{}},
		{"zero step", []float64{0, 1, 2}, []float64{1, 2, 3}, 10, Options{}},
		{"negative step", []float64{-1, 1, 2}, []float64{1, 2, 3}, 10, Options{}},
		{"NaN step", []float64{math.NaN(), 1, 2}, []float64{1, 2, 3}, 10, Options{}},
		{"zero horizon", []float64{1, 2, 3}, []float64{1, 2, 3}, 0, Options{}},
		{"NaN horizon", []float64{1, 2, 3}, []float64{1, 2, 3}, math.NaN(), Options{}},
		{"negative noise", []float64{1, 2, 3}, []float64{1, 2, 3}, 10, Options{NoiseSD: -1}},
		{"NaN scale", []float64{1, 2, 3}, []float64{1, 2, 3}, 10, Options{Scale: math.NaN()}},
	}
	for _, c := range bad {
		if m, err := Fit(c.t, c.y, c.h, c.opt); err == nil {
			t.Errorf("%s: no error (model %v)", c.name, m)
		}
	}
	if _, err := Fit([]float64{1, 2}, []float64{1, 0.5}, 10, Options{}); !errors.Is(err, ErrTooShort) {
		t.Errorf("two steps: %v, want ErrTooShort", err)
	}
	good := []struct {
		name string
		t, y []float64
	}{
		{"constant", []float64{1, 2, 3, 4}, []float64{0.5, 0.5, 0.5, 0.5}},
		{"constant zero", []float64{1, 2, 3}, []float64{0, 0, 0}},
		{"three points", []float64{1, 2, 3}, []float64{0.9, 0.6, 0.5}},
		{"repeated steps", []float64{1, 1, 2, 3, 3}, []float64{0.9, 0.8, 0.6, 0.5, 0.52}},
		{"unordered", []float64{3, 1, 2}, []float64{0.5, 0.9, 0.6}},
		{"increasing", []float64{1, 2, 3, 4}, []float64{10, 20, 25, 27}},
		{"huge values", []float64{1, 2, 3}, []float64{1e200, 5e199, 4e199}},
		{"tiny values", []float64{1, 2, 3}, []float64{1e-200, 5e-201, 4e-201}},
		{"large steps", []float64{1e6, 2e6, 3e6}, []float64{3, 2, 1.5}},
		{"zigzag", []float64{1, 2, 3, 4, 5}, []float64{1, 0, 1, 0, 1}},
	}
	for _, c := range good {
		m, err := Fit(c.t, c.y, 100, Options{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, s := range []float64{1, 50, 100, 1e4} {
			p := m.Predict(s)
			if math.IsNaN(p.Mean) || math.IsInf(p.Mean, 0) || math.IsNaN(p.SD) || math.IsInf(p.SD, 0) || p.SD < 0 {
				t.Errorf("%s: Predict(%g) = %+v", c.name, s, p)
			}
		}
		if p := m.Predict(0); !math.IsNaN(p.Mean) {
			t.Errorf("%s: Predict(0) = %+v, want NaN", c.name, p)
		}
		w := m.FamilyWeights()
		sum := 0.0
		for _, v := range w {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: family weights %v sum to %v", c.name, w, sum)
		}
	}
	// A constant curve is predicted constant.
	m, _ := Fit([]float64{1, 2, 3, 4}, []float64{0.5, 0.5, 0.5, 0.5}, 100, Options{})
	if p := m.Predict(100); math.Abs(p.Mean-0.5) > 1e-6 {
		t.Errorf("constant curve predicted %+v at 100", p)
	}
}

// TestNoisePrior: a prior noise guess is used (a short curve's noise
// cannot be estimated from itself).
func TestNoisePrior(t *testing.T) {
	ts := []float64{1, 2, 3}
	ys := []float64{0.8, 0.7, 0.66}
	m, err := Fit(ts, ys, 81, Options{NoiseSD: 0.05, NoiseDF: 100})
	if err != nil {
		t.Fatal(err)
	}
	if s := m.NoiseSD(); math.Abs(s-0.05) > 0.005 {
		t.Errorf("noise SD %v with a strong prior of 0.05", s)
	}
}

// TestShapesPrior: a shape prior of the wrong length or with a bad weight
// is refused; a fit's Shapes sum to 1 and, given as the prior of a fit of
// a short noisy curve, move its family weights toward the long curve's.
func TestShapesPrior(t *testing.T) {
	ts := steps(3)
	ys := []float64{0.8, 0.7, 0.66}
	if _, err := Fit(ts, ys, 81, Options{Shapes: []float64{1}}); err == nil {
		t.Error("a shape prior of length 1: no error")
	}
	bad := make([]float64, GridSize())
	bad[0] = math.NaN()
	if _, err := Fit(ts, ys, 81, Options{Shapes: bad}); err == nil {
		t.Error("a NaN shape weight: no error")
	}
	long := steps(60)
	ly := make([]float64, len(long))
	for i, s := range long {
		ly[i] = 2 - 1.5*math.Exp(-s/9)
	}
	lm, err := Fit(long, ly, 81, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := lm.Shapes()
	sum := 0.0
	for _, v := range sh {
		sum += v
	}
	if len(sh) != GridSize() || math.Abs(sum-1) > 1e-9 {
		t.Fatalf("shapes: %d weights summing to %v", len(sh), sum)
	}
	plain, err := Fit(ts, ys, 81, Options{NoiseSD: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	informed, err := Fit(ts, ys, 81, Options{NoiseSD: 0.05, Shapes: sh})
	if err != nil {
		t.Fatal(err)
	}
	top := 0
	lw := lm.FamilyWeights()
	for f := range lw {
		if lw[f] > lw[top] {
			top = f
		}
	}
	if pw, iw := plain.FamilyWeights()[top], informed.FamilyWeights()[top]; !(iw > pw) {
		t.Errorf("family %s: weight %v with the long curve's shapes as prior, %v without", FamilyNames[top], iw, pw)
	}
}

package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/tunables"
)

func twoDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric},
		{Name: "y", Tunable: "y", Kind: tunables.DimNumeric},
	}
}

// bowl is a smooth 2-D function with its minimum 1 at (0.3, 0.6).
func bowl(p tunables.Point) float64 {
	return 1 + 4*(p[0]-0.3)*(p[0]-0.3) + 2*(p[1]-0.6)*(p[1]-0.6)
}

// The region's side doubles after nlSuccTol successes in a row, halves
// after max(4, D)/q failures, stays within [nlMinLength, nlMaxLength], and
// a round without new measurements counts nothing.
func TestNoiseLocalRound(t *testing.T) {
	type step struct{ inc, n int }
	for _, tc := range []struct {
		name  string
		d     int
		steps []step
		want  float64
	}{
		{"first round only starts counting", 2, []step{{5, 10}}, nlInitLength},
		{"three successes double", 2, []step{{0, 10}, {10, 11}, {11, 12}, {12, 13}}, 2 * nlInitLength},
		{"doubling stops at the maximum", 2, []step{{0, 10}, {10, 11}, {11, 12}, {12, 13}, {13, 14}, {14, 15}, {15, 16}, {16, 17}, {17, 18}, {18, 19}}, nlMaxLength},
		{"four failures halve in 2-D", 2, []step{{0, 10}, {0, 11}, {0, 12}, {0, 13}, {0, 14}}, nlInitLength / 2},
		{"three failures do not", 2, []step{{0, 10}, {0, 11}, {0, 12}, {0, 13}}, nlInitLength},
		{"six failures halve in 6-D", 6, []step{{0, 10}, {0, 11}, {0, 12}, {0, 13}, {0, 14}, {0, 15}, {0, 16}}, nlInitLength / 2},
		{"a batch of 4 failing halves at once", 2, []step{{0, 10}, {0, 14}}, nlInitLength / 2},
		{"a success resets the failures", 2, []step{{0, 10}, {0, 11}, {0, 12}, {0, 13}, {13, 14}, {0, 15}}, nlInitLength},
		{"pending only: nothing counted", 2, []step{{0, 10}, {0, 10}, {0, 10}, {0, 10}, {0, 10}, {0, 10}}, nlInitLength},
		{"halving stops at the minimum", 2, []step{{0, 10}, {0, 14}, {0, 18}, {0, 22}, {0, 26}, {0, 30}, {0, 34}}, nlMinLength},
	} {
		nl := &noiseLocal{length: nlInitLength, seen: -1}
		for _, s := range tc.steps {
			nl.round(s.inc, s.n, tc.d)
		}
		if math.Abs(nl.length-tc.want) > 1e-12 {
			t.Errorf("%s: side %v, want %v", tc.name, nl.length, tc.want)
		}
	}
}

func noisyRun(t *testing.T, o *Optimizer, n int, seed uint64, check func(p tunables.Point)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	for range n {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(pts[0])
		}
		y := bowl(pts[0]) * (1 + 0.1*rng.NormFloat64())
		if err := o.Observe(Observation{X: pts[0], Y: []float64{y}}); err != nil {
			t.Fatal(err)
		}
	}
}

// After the global phase every suggestion lies in the region: the box of
// half sides L·w_i/2 around the configuration with the lowest posterior
// mean (Ranked's first).
func TestNoiseLocalStaysInRegion(t *testing.T) {
	defer func(v float64) { nlEIFactor = v }(nlEIFactor)
	nlEIFactor = 0 // every suggestion after the start is the local search's
	o, err := New(twoDims(), Options{Seed: 4, MaxTrials: 40})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	o.SetNoiseLocal(true)
	start := o.nlStart()
	if start != 16 {
		t.Fatalf("local search starts after %d observations, want 40%% of 40", start)
	}
	local := 0
	noisyRun(t, o, 40, 1, func(p tunables.Point) {
		if o.hist.Len() < start {
			if o.nl.seen >= 0 {
				t.Fatalf("local search counted a round at %d observations", o.hist.Len())
			}
			return
		}
		local++
		c := o.Ranked(1)[0]
		half := nlHalfSides(o.nl.theta, o.cat, o.nl.length)
		for i := range p {
			if math.Abs(p[i]-c[i]) > half[i]+1e-12 {
				t.Fatalf("at %d observations: %v outside the region %v ± %v", o.hist.Len(), p, c, half)
			}
		}
	})
	if local != 40-start {
		t.Errorf("%d local suggestions, want %d", local, 40-start)
	}
	if o.nl.theta == nil {
		t.Error("the local GP was never fitted")
	}
}

// A lucky observation far from the basin (a heavy outlier) is not a
// success: the round is counted on posterior means, and the region stays
// around the model's best.
func TestNoiseLocalLuckyObservationIsNoSuccess(t *testing.T) {
	o, err := New(twoDims(), Options{Seed: 2, MaxTrials: 40})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	o.SetNoiseLocal(true)
	noisyRun(t, o, o.nlStart()+3, 5, nil)
	if _, err := o.Suggest(1, nil); err != nil { // counts the last measurement
		t.Fatal(err)
	}
	succ, fail, length := o.nl.succ, o.nl.fail, o.nl.length
	lucky := tunables.Point{0.95, 0.05}
	if err := o.Observe(Observation{X: lucky, Y: []float64{-50}}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	failed := o.nl.fail == fail+1 || o.nl.fail == 0 && (o.nl.length < length || length == nlMinLength)
	if o.nl.succ != 0 || !failed {
		t.Errorf("after a lucky draw: successes %d (was %d), failures %d (was %d), side %v (was %v): want a failure",
			o.nl.succ, succ, o.nl.fail, fail, o.nl.length, length)
	}
	if best := o.Ranked(1)[0]; cmp.Equal(best, lucky) {
		t.Errorf("the lucky draw became the center")
	}
}

// The setting acts only in noise-aware mode, and off changes nothing.
func TestNoiseLocalNeedsNoiseAware(t *testing.T) {
	run := func(aware, local bool) []tunables.Point {
		o, err := New(twoDims(), Options{Seed: 3, MaxTrials: 30})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, aware)
		o.SetNoiseLocal(local)
		var pts []tunables.Point
		noisyRun(t, o, 24, 9, func(p tunables.Point) { pts = append(pts, p) })
		return pts
	}
	if !cmp.Equal(run(false, true), run(false, false)) {
		t.Error("without noise-aware mode the local search changed the suggestions")
	}
	if cmp.Equal(run(true, true), run(true, false)) {
		t.Error("in noise-aware mode the local search changed nothing")
	}
}

// The local search takes a suggestion only when the global search expects
// less than nlEIFactor noise standard deviations of improvement: on pure
// noise (measured three times a point, so that the model knows it is
// noise) it does, on a noiseless function measured at a few points it
// does not.
func TestNoiseLocalTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		reps  int
		f     func(p tunables.Point, e float64) float64
		local bool
	}{
		{"pure noise", 12, 3, func(_ tunables.Point, e float64) float64 { return 1 + 0.1*e }, true},
		{"noiseless, few points", 8, 1, func(p tunables.Point, _ float64) float64 { return bowl(p) }, false},
	} {
		o, err := New(twoDims(), Options{Seed: 6, MaxTrials: 40})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, true)
		o.SetNoiseLocal(true)
		rng := rand.New(rand.NewPCG(8, 9))
		for range tc.n {
			p := o.sp.Random(rng)
			for range tc.reps {
				if err := o.Observe(Observation{X: p, Y: []float64{tc.f(p, rng.NormFloat64())}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := o.nlLocalTurn(func(string) bool { return false }); got != tc.local {
			t.Errorf("%s: local turn %v, want %v", tc.name, got, tc.local)
		}
	}
}

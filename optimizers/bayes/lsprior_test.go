package bayes

import (
	"math"
	"slices"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// runSine observes n Suggest steps of sin(6x₀) + 0.1·x₁ (inputs in [0,1]) on o.
func runSine(t *testing.T, o *Optimizer, n int) {
	t.Helper()
	for range n {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		x := pts[0]
		if err := o.Observe(Observation{X: x, Y: []float64{math.Sin(6*x[0]) + 0.1*x[1]}}); err != nil {
			t.Fatal(err)
		}
	}
}

// The lengthscale prior set by SetLengthscalePrior is the one fitted
// under: with few points, a prior whose median is 100 times longer gives
// longer fitted lengthscales (the weak input's by far), and bad values,
// a prior set after the first fit or with the additive kernel are errors.
func TestSetLengthscalePrior(t *testing.T) {
	fitted := func(median float64) []float64 {
		o, err := New(unitDims(2), Options{Seed: 3, MaxTrials: 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := o.Lengthscales(); ok {
			t.Fatal("Lengthscales before the first fit: ok")
		}
		if median > 0 {
			if err := o.SetLengthscalePrior(median, 0.5, 1000); err != nil {
				t.Fatal(err)
			}
		}
		runSine(t, o, 9)
		ls, ok := o.Lengthscales()
		if !ok || len(ls) != 2 {
			t.Fatalf("Lengthscales after 9 observations: %v, %v", ls, ok)
		}
		return ls
	}
	def, short, long := fitted(0), fitted(0.05), fitted(5)
	if !(long[1] > 10*short[1]) || !(long[0] > short[0]) {
		t.Errorf("lengthscales under a prior of median 0.05: %v, of median 5: %v (default %v): want the long prior's longer", short, long, def)
	}
	if long[1] <= 10 && long[1] < 2*def[1] {
		t.Errorf("weak input's lengthscale %v under a prior of median 5, %v under the default: the bound 10 or the prior not replaced", long[1], def[1])
	}

	o, err := New(unitDims(2), Options{Seed: 3, MaxTrials: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][3]float64{{0, 1, 10}, {1, 0, 10}, {1, 1, 0.01}, {math.Inf(1), 1, 10}, {1, 1, math.NaN()}} {
		if err := o.SetLengthscalePrior(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("SetLengthscalePrior(%v): no error", bad)
		}
	}
	runSine(t, o, 9)
	if err := o.SetLengthscalePrior(1, 1, 10); err == nil {
		t.Error("SetLengthscalePrior after the first fit: no error")
	}
	a, err := New(unitDims(2), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetAdditive(true); err != nil {
		t.Fatal(err)
	}
	if err := a.SetLengthscalePrior(1, 1, 10); err == nil {
		t.Error("SetLengthscalePrior with the additive kernel: no error")
	}
}

// AcqNear neither refits nor draws from the optimizer's generator: asking
// it after every suggestion leaves the run unchanged; the ascent from the
// suggestion itself never ends below the suggestion's value; before the
// first fit it is an error.
func TestAcqNearLeavesTheSearchAlone(t *testing.T) {
	run := func(ask bool) []tunables.Point {
		o, err := New(unitDims(2), Options{Seed: 5, MaxTrials: 25})
		if err != nil {
			t.Fatal(err)
		}
		var out []tunables.Point
		for i := range 18 {
			pts, err := o.Suggest(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := pts[0]
			out = append(out, x)
			if ask {
				_, _, _, err := o.AcqNear(x, tunables.Point{0.5, 0.5})
				if i < 6 {
					if err == nil {
						t.Errorf("AcqNear at step %d, before the first fit: no error", i)
					}
				} else if err != nil {
					t.Fatal(err)
				} else {
					atP, best, reached, err := o.AcqNear(x, x)
					if err != nil || best < atP || reached == nil {
						t.Errorf("AcqNear(x, x) at step %d: %v, %v, %v, %v; want an ascent from x at least x's value", i, atP, best, reached, err)
					}
				}
			}
			if err := o.Observe(Observation{X: x, Y: []float64{math.Sin(6*x[0]) + 0.1*x[1]}}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	plain, asked := run(false), run(true)
	for i := range plain {
		if !slices.Equal(plain[i], asked[i]) {
			t.Fatalf("suggestion %d: %v with AcqNear asked, %v without", i, asked[i], plain[i])
		}
	}
}

// SetAcqEffort(0, 0, 0) keeps the defaults (the same run); more random
// candidates, or global starts, change the run; negative counts are
// errors.
func TestSetAcqEffort(t *testing.T) {
	run := func(random, starts, global int) []tunables.Point {
		o, err := New(unitDims(2), Options{Seed: 7, MaxTrials: 20})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetAcqEffort(random, starts, global); err != nil {
			t.Fatal(err)
		}
		var out []tunables.Point
		for range 12 {
			pts, err := o.Suggest(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := pts[0]
			out = append(out, x)
			if err := o.Observe(Observation{X: x, Y: []float64{math.Sin(6*x[0]) + 0.1*x[1]}}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	def, zero, more, glob := run(256, 3, 0), run(0, 0, 0), run(2048, 10, 0), run(256, 3, 20)
	if !slices.EqualFunc(def, zero, func(a, b tunables.Point) bool { return slices.Equal(a, b) }) {
		t.Error("SetAcqEffort(0, 0) changed the run")
	}
	if slices.EqualFunc(def, more, func(a, b tunables.Point) bool { return slices.Equal(a, b) }) {
		t.Error("SetAcqEffort(2048, 10, 0) left the run unchanged")
	}
	if slices.EqualFunc(def, glob, func(a, b tunables.Point) bool { return slices.Equal(a, b) }) {
		t.Error("SetAcqEffort(256, 3, 20) left the run unchanged")
	}
	o, _ := New(unitDims(2), Options{Seed: 7})
	if err := o.SetAcqEffort(-1, 3, 0); err == nil {
		t.Error("SetAcqEffort(-1, 3, 0): no error")
	}
}

package bayes

import (
	"math"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestTargetOverride: the model learns the override's value instead of the
// observed one (it can change after the observation, without a second
// one), a tiny weight makes the point count for almost nothing, and
// removing the override gives the observed values back.
func TestTargetOverride(t *testing.T) {
	dims := []tunables.Dim{{Name: "x", Kind: tunables.DimNumeric}}
	o, err := New(dims, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		x := float64(i) / 10
		if err := o.Observe(Observation{X: tunables.Point{x}, Y: []float64{x}}); err != nil {
			t.Fatal(err)
		}
	}
	best := func() float64 { return o.Ranked(1)[0][0] }
	if b := best(); b != 0 {
		t.Fatalf("without an override the best is %v, want 0", b)
	}
	val, weight := -5.0, 1.0
	o.SetTargetOverride(func(x tunables.Point) (float64, float64, bool) {
		if x[0] == 0.9 {
			return val, weight, true
		}
		return 0, 0, false
	})
	if b := best(); b != 0.9 {
		t.Errorf("with 0.9 overridden to -5 the best is %v", b)
	}
	val = 5 // the override changes: the model follows
	if b := best(); b != 0 {
		t.Errorf("with 0.9 overridden to 5 the best is %v", b)
	}
	val, weight = -0.5, 1
	if b := best(); b != 0.9 {
		t.Errorf("with 0.9 overridden to -0.5 the best is %v", b)
	}
	weight = 1e-6 // the same value, counting for almost nothing
	if b := best(); b != 0 {
		t.Errorf("with a weight of 1e-6 the best is %v, want 0", b)
	}
	val, weight = math.NaN(), 1 // not finite: the observed value is kept
	if b := best(); b != 0 {
		t.Errorf("with a NaN override the best is %v, want 0", b)
	}
	if _, err := o.Suggest(2, nil); err != nil {
		t.Fatal(err)
	}
	o.SetTargetOverride(nil)
	if b := best(); b != 0 {
		t.Errorf("override removed: the best is %v, want 0", b)
	}
}

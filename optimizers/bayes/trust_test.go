package bayes

import (
	"math"
	"testing"

	"github.com/benchtune/bench/tunables"
)

func TestTrustRegionUpdates(t *testing.T) {
	tr := newTrustRegion(20)
	tr.update(11)
	tr.round(4)                             // the first round only records the best
	for _, y := range []float64{10, 9, 8} { // three improving rounds
		tr.update(y)
		tr.update(50) // others in the batch do not matter
		tr.round(4)
	}
	if tr.length != 2*trInitLength {
		t.Errorf("after 3 successes the side is %v, want %v", tr.length, 2*trInitLength)
	}
	for range 5 { // ⌈20/4⌉ failing rounds of 4
		tr.update(100)
		tr.round(4)
	}
	if tr.length != trInitLength {
		t.Errorf("after 5 failing rounds of 4 the side is %v, want %v", tr.length, trInitLength)
	}
	for range 5 * 7 {
		tr.round(4)
	}
	if tr.length != trInitLength || tr.restarts != 1 {
		t.Errorf("a collapsed region restarts at its initial size: %v, %d restarts", tr.length, tr.restarts)
	}
}

// From 20 dimensions up the optimizer uses the region once it has 2·D
// points; its suggestions then stay near the incumbent.
func TestTrustRegionSuggestions(t *testing.T) {
	dims := make([]tunables.Dim, 20)
	for i := range dims {
		dims[i] = tunables.Dim{Name: string(rune('a' + i)), Tunable: string(rune('a' + i)), Kind: tunables.DimNumeric}
	}
	o, err := New(dims, Options{Seed: 1})
	if err != nil || o.tr == nil {
		t.Fatalf("no trust region in 20-D: %v", err)
	}
	f := func(p tunables.Point) float64 {
		s := 0.0
		for _, v := range p {
			s += (v - 0.3) * (v - 0.3)
		}
		return s
	}
	for range 50 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{f(pts[0])}}); err != nil {
			t.Fatal(err)
		}
	}
	center := o.anchors(o.g)[0]
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range pts[0] {
		if math.Abs(v-center[i]) > o.tr.length*trMaxWeight/2+1e-9 {
			t.Errorf("coordinate %d moved %v from the center, outside the region of side %v", i, v-center[i], o.tr.length)
		}
	}
	if off, err := New(dims, Options{TrustRegion: -1}); err != nil || off.tr != nil {
		t.Errorf("TrustRegion -1 keeps the global search: %v", err)
	}
}

// In the trust region the hyperparameters are fitted on the points
// nearest the best one.
func TestNearestPoints(t *testing.T) {
	xs := [][]float64{{0.9, 0.9}, {0.1, 0.1}, {0.5, 0.5}, {0.12, 0.1}, {0.1, 0.3}}
	got := nearest(xs, 1, 3)
	want := []int{1, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("nearest = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("nearest = %v, want %v", got, want)
		}
	}
	if all := nearest(xs, 0, 10); len(all) != len(xs) || all[0] != 0 {
		t.Errorf("k above the number of points: %v", all)
	}
}

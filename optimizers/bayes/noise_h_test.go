package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// A sharp 2-D bowl, f = 40·|x − (0.62, 0.31)|², measured with noise of
// standard deviation 0.1: after a search, the staged refinement's rounds
// follow the posterior mean's minimiser, shrink, and end nearer the
// minimum than the incumbent they started from.
func sharpBowl(p tunables.Point) float64 {
	return 40 * ((p[0]-0.62)*(p[0]-0.62) + (p[1]-0.31)*(p[1]-0.31))
}

func bowlDims() []tunables.Dim {
	return []tunables.Dim{{Name: "a", Tunable: "a", Kind: tunables.DimNumeric}, {Name: "b", Tunable: "b", Kind: tunables.DimNumeric}}
}

func searchedBowl(t *testing.T, seed int64, n int, sd float64) (*Optimizer, func(tunables.Point)) {
	t.Helper()
	o, err := New(bowlDims(), Options{Seed: seed, MaxTrials: 60})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	measure := func(p tunables.Point) {
		if err := o.Observe(Observation{X: p, Y: []float64{sharpBowl(p) + sd*rng.NormFloat64()}}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		measure(pts[0])
	}
	return o, measure
}

func dist(p tunables.Point) float64 { return math.Hypot(p[0]-0.62, p[1]-0.31) }

func TestStagedRefinementFollowsTheMinimiser(t *testing.T) {
	wins := 0
	for seed := range int64(4) {
		o, measure := searchedBowl(t, seed+1, 20, 0.5)
		inc := o.Ranked(1)[0]
		st, err := o.NewStaged()
		if err != nil {
			t.Fatal(err)
		}
		var spreads []float64
		for i, n := range StagedSplit(18, StagedStages) {
			pts, err := st.Design(n)
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) != n || st.Stage() != i+1 {
				t.Fatalf("round %d: %d points, stage %d; want %d, %d", i+1, len(pts), st.Stage(), n, i+1)
			}
			lo, hi := slices.Clone(pts[0]), slices.Clone(pts[0])
			for _, p := range pts {
				for k := range 2 {
					lo[k], hi[k] = min(lo[k], p[k]), max(hi[k], p[k])
				}
				measure(p)
			}
			spreads = append(spreads, (hi[0]-lo[0])+(hi[1]-lo[1]))
		}
		if !(spreads[2] < spreads[0]) {
			t.Errorf("seed %d: the last round's design spreads over %.3g, the first's %.3g: the box did not shrink", seed+1, spreads[2], spreads[0])
		}
		best, err := st.Best()
		if err != nil {
			t.Fatal(err)
		}
		if dist(best) > 0.05 {
			t.Errorf("seed %d: the staged minimiser %v is %.3f from the minimum (incumbent %v at %.3f)", seed+1, best, dist(best), inc, dist(inc))
		}
		t.Logf("seed %d: incumbent %.4f, staged %.4f", seed+1, dist(inc), dist(best))
		if dist(best) < dist(inc) {
			wins++
		}
	}
	if wins < 3 {
		t.Errorf("the staged minimiser was nearer the minimum than the incumbent on %d of 4 seeds, want 3 at least", wins)
	}
}

// The bowl with little noise, searched for 25 evaluations, has settled;
// pure noise, where the model's noise is all of the variation, has not
// settled on anything worth refining.
func TestSearchSettled(t *testing.T) {
	if o, _ := searchedBowl(t, 1, 25, 0.1); !o.SearchSettled(1) {
		t.Error("a 2-D bowl searched for 25 evaluations: not settled")
	}
	o, err := New(bowlDims(), Options{Seed: 3, MaxTrials: 60})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(3, 4))
	if o.SearchSettled(1) {
		t.Error("settled without observations")
	}
	for range 30 {
		p := tunables.Point{rng.Float64(), rng.Float64()}
		if err := o.Observe(Observation{X: p, Y: []float64{rng.NormFloat64()}}); err != nil {
			t.Fatal(err)
		}
	}
	if o.SearchSettled(1) {
		t.Error("settled on pure noise")
	}
}

// Asking whether the search settled does not change what it suggests.
func TestSearchSettledLeavesTheSearchAlone(t *testing.T) {
	a, _ := searchedBowl(t, 9, 15, 0.1)
	b, _ := searchedBowl(t, 9, 15, 0.1)
	b.SearchSettled(1)
	sameNextSuggestion(t, a, b, "after the test")
}

// sameNextSuggestion fails the test when b's next suggestion differs from
// a's (b: the same optimizer asked or set something, what).
func sameNextSuggestion(t *testing.T, a, b *Optimizer, what string) {
	t.Helper()
	pa, err := a.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pa[0], pb[0]) {
		t.Errorf("next suggestion %v %s, %v without", pb[0], what, pa[0])
	}
}

func TestStagedSplit(t *testing.T) {
	for _, tc := range []struct {
		n, stages int
		want      []int
	}{{30, 3, []int{10, 10, 10}}, {31, 3, []int{10, 10, 11}}, {2, 3, []int{0, 1, 1}}, {7, 1, []int{7}}} {
		got := StagedSplit(tc.n, tc.stages)
		if !slices.Equal(got, tc.want) {
			t.Errorf("StagedSplit(%d, %d) = %v, want %v", tc.n, tc.stages, got, tc.want)
		}
	}
}

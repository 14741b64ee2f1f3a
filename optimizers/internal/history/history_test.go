package history

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

func newHistory(t *testing.T, m int) *History {
	t.Helper()
	sp, err := space.New([]tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric, Levels: 11},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(sp, m)
}

func TestRepeatsAreMerged(t *testing.T) {
	h := newHistory(t, 1)
	inf := math.Inf(1)
	obs := []algo.Observation{
		{X: tunables.Point{0.3, 1}, Y: []float64{4}},
		{X: tunables.Point{0.31, 1.2}, Y: []float64{6}}, // snaps onto the same point
		{X: tunables.Point{0.5, 0}, Y: []float64{inf}},
		{X: tunables.Point{0.3, 1}, Y: []float64{inf}},
		{X: tunables.Point{0.3, 1}, Y: []float64{2}},
	}
	idx, err := h.AddAll(obs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 0, 1, 0, 0}, idx); diff != "" {
		t.Errorf("entry indices (-want +got):\n%s", diff)
	}
	if h.Len() != 2 {
		t.Fatalf("Len = %d, want 2", h.Len())
	}
	e := h.Entries()[0]
	if e.N != 3 || e.Failed != 1 || e.Count() != 4 {
		t.Errorf("N, Failed = %d, %d, want 3, 1", e.N, e.Failed)
	}
	if diff := cmp.Diff([]float64{4}, e.Mean()); diff != "" {
		t.Errorf("mean (-want +got):\n%s", diff)
	}
	if m := h.Entries()[1].Mean(); !math.IsInf(m[0], 1) {
		t.Errorf("mean of a failed-only point = %v, want +Inf", m)
	}
	if diff := cmp.Diff([]int{0, 0, 1, 0, 0}, h.Order()); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if i, ok := h.Lookup(space.Key(tunables.Point{0.5, 0})); !ok || i != 1 {
		t.Errorf("Lookup = %d, %v", i, ok)
	}
}

func TestValidationIsAtomic(t *testing.T) {
	tests := []struct {
		name string
		obs  algo.Observation
		want string
	}{
		{"wrong length", algo.Observation{X: tunables.Point{0}, Y: []float64{1}}, "1 coordinates"},
		{"NaN coordinate", algo.Observation{X: tunables.Point{math.NaN(), 0}, Y: []float64{1}}, "is NaN"},
		{"objective count", algo.Observation{X: tunables.Point{0, 0}, Y: []float64{1, 2}}, "2 objective values, want 1"},
		{"NaN objective", algo.Observation{X: tunables.Point{0, 0}, Y: []float64{math.NaN()}}, "objective 0 is NaN"},
		{"-Inf objective", algo.Observation{X: tunables.Point{0, 0}, Y: []float64{math.Inf(-1)}}, "objective 0 is -Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, 1)
			good := algo.Observation{X: tunables.Point{0, 0}, Y: []float64{1}}
			_, err := h.AddAll([]algo.Observation{good, tc.obs})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "observation 1") {
				t.Fatalf("error = %v, want it to name observation 1 and contain %q", err, tc.want)
			}
			if h.Len() != 0 {
				t.Errorf("%d points recorded despite the error", h.Len())
			}
		})
	}
}

func TestBestAndParetoFront(t *testing.T) {
	h := newHistory(t, 2)
	inf := math.Inf(1)
	if _, ok := h.Best(); ok {
		t.Error("Best of an empty history reported a point")
	}
	if _, err := h.AddAll([]algo.Observation{
		{X: tunables.Point{0, 0}, Y: []float64{inf, inf}},
		{X: tunables.Point{0.1, 0}, Y: []float64{2, 5}},
		{X: tunables.Point{0.2, 0}, Y: []float64{2, 3}},
		{X: tunables.Point{0.3, 0}, Y: []float64{3, 1}},
		{X: tunables.Point{0.4, 0}, Y: []float64{4, 4}},
	}); err != nil {
		t.Fatal(err)
	}
	best, ok := h.Best()
	if !ok {
		t.Fatal("no best")
	}
	want := algo.Observation{X: tunables.Point{0.2, 0}, Y: []float64{2, 3}}
	if diff := cmp.Diff(want, best); diff != "" {
		t.Errorf("Best (lexicographic) mismatch (-want +got):\n%s", diff)
	}
	front := h.ParetoFront()
	wantFront := []algo.Observation{
		{X: tunables.Point{0.2, 0}, Y: []float64{2, 3}},
		{X: tunables.Point{0.3, 0}, Y: []float64{3, 1}},
	}
	if diff := cmp.Diff(wantFront, front); diff != "" {
		t.Errorf("ParetoFront mismatch (-want +got):\n%s", diff)
	}
}

// An aggregator replaces the mean of repeated measurements; the spread
// is kept.
func TestAggregator(t *testing.T) {
	sp, err := space.New([]tunables.Dim{{Name: "x", Tunable: "x", Kind: tunables.DimNumeric}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(sp, 1)
	h.SetAggregator(func(_ int, v []float64) float64 { return slices.Min(v) })
	if _, err := h.AddAll([]algo.Observation{{X: tunables.Point{0.5}, Y: []float64{3}}, {X: tunables.Point{0.5}, Y: []float64{1}}, {X: tunables.Point{0.5}, Y: []float64{2}}}); err != nil {
		t.Fatal(err)
	}
	e := h.Entries()[0]
	if got := e.Mean()[0]; got != 1 {
		t.Errorf("aggregate %v, want the min 1", got)
	}
	if got := e.Var(0); got != 1 {
		t.Errorf("variance %v, want 1", got)
	}
}

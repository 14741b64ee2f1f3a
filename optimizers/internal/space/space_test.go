package space

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/tunables"
)

// mixedDims: continuous x, int n (5 levels), categorical c (3 choices,
// weighted), and a tunable "s" with special values (selector with 3
// choices + 4 levels).
func mixedDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric},
		{Name: "n", Tunable: "n", Kind: tunables.DimNumeric, Levels: 5},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 3, Weights: []float64{1, 0, 3}},
		{Name: "s!special", Tunable: "s", Kind: tunables.DimCategorical, Choices: 3},
		{Name: "s", Tunable: "s", Kind: tunables.DimNumeric, Levels: 4},
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		dims []tunables.Dim
		want string
	}{
		{"empty", nil, "no dimensions"},
		{"negative levels", []tunables.Dim{{Name: "a", Levels: -1}}, "negative number of levels"},
		{"no choices", []tunables.Dim{{Name: "a", Kind: tunables.DimCategorical}}, "at least one choice"},
		{"weights length", []tunables.Dim{{Name: "a", Kind: tunables.DimCategorical, Choices: 2, Weights: []float64{1}}}, "1 weights for 2 choices"},
		{"negative weight", []tunables.Dim{{Name: "a", Kind: tunables.DimCategorical, Choices: 2, Weights: []float64{1, -1}}}, "non-negative"},
		{"zero weights", []tunables.Dim{{Name: "a", Kind: tunables.DimCategorical, Choices: 2, Weights: []float64{0, 0}}}, "sum to zero"},
		{"NaN weight", []tunables.Dim{{Name: "a", Kind: tunables.DimCategorical, Choices: 2, Weights: []float64{math.NaN(), 1}}}, "finite"},
		{"unknown kind", []tunables.Dim{{Name: "a", Kind: 7}}, "unknown kind"},
		{"selector last", []tunables.Dim{{Name: "a!special", Tunable: "a", Kind: tunables.DimCategorical, Choices: 2}}, "must be followed"},
		{"selector wrong tunable", []tunables.Dim{
			{Name: "a!special", Tunable: "a", Kind: tunables.DimCategorical, Choices: 2},
			{Name: "b", Tunable: "b", Kind: tunables.DimNumeric},
		}, "must be followed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.dims)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSnap(t *testing.T) {
	sp, err := New(mixedDims())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   tunables.Point
		want tunables.Point
	}{
		{"already canonical", tunables.Point{0.3, 0.25, 2, 0, 1.0 / 3}, tunables.Point{0.3, 0.25, 2, 0, 1.0 / 3}},
		{"clamp and round", tunables.Point{1.7, 0.3, 2.6, -0.2, 0.9}, tunables.Point{1, 0.25, 2, 0, 1}},
		{"below range", tunables.Point{-3, -1, -4, 0.4, 0.2}, tunables.Point{0, 0, 0, 0, 1.0 / 3}},
		{"special chosen zeroes the numeric", tunables.Point{0.5, 0.5, 1, 2, 0.7}, tunables.Point{0.5, 0.5, 1, 2, 0}},
		{"NaN-safe", tunables.Point{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}, tunables.Point{0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sp.Snap(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Snap mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapUnit(t *testing.T) {
	tests := []struct {
		u      float64
		levels int
		want   float64
	}{
		{0.42, 0, 0.42}, {1.2, 0, 1}, {-0.1, 0, 0}, {0.42, 1, 0}, {0.42, 2, 0}, {0.51, 2, 1}, {0.6, 11, 0.6}, {0.64, 11, 0.6},
	}
	for _, tc := range tests {
		if got := SnapUnit(tc.u, tc.levels); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("SnapUnit(%v, %d) = %v, want %v", tc.u, tc.levels, got, tc.want)
		}
	}
}

func TestKeyFoldsNegativeZero(t *testing.T) {
	if Key(tunables.Point{0, 1}) != Key(tunables.Point{math.Copysign(0, -1), 1}) {
		t.Error("keys of 0 and -0 differ")
	}
	if Key(tunables.Point{0, 1}) == Key(tunables.Point{1, 0}) {
		t.Error("keys of different points are equal")
	}
}

func TestFromKeyInvertsKey(t *testing.T) {
	for _, p := range []tunables.Point{{}, {0.25, 1, 0}, {math.SmallestNonzeroFloat64, 0.5, 2}} {
		if got := FromKey(Key(p)); !slices.Equal(got, p) {
			t.Errorf("FromKey(Key(%v)) = %v", p, got)
		}
	}
}

func TestCheck(t *testing.T) {
	sp, _ := New(mixedDims())
	if err := sp.Check(tunables.Point{0, 0}); err == nil || !strings.Contains(err.Error(), "2 coordinates") {
		t.Errorf("short point: error = %v", err)
	}
	if err := sp.Check(tunables.Point{0, 0, math.Inf(1), 0, 0}); err == nil || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("Inf coordinate: error = %v", err)
	}
	if err := sp.Check(tunables.Point{0, 0, 0, 0, 0}); err != nil {
		t.Errorf("valid point: %v", err)
	}
}

func TestRandomAndLatinHypercubeAreCanonical(t *testing.T) {
	sp, _ := New(mixedDims())
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 3)
	for range 2000 {
		p := sp.Random(rng)
		if diff := cmp.Diff(sp.Snap(p), p); diff != "" {
			t.Fatalf("random point not canonical:\n%s", diff)
		}
		counts[int(p[2])]++
	}
	if counts[1] != 0 {
		t.Errorf("choice with weight 0 drawn %d times", counts[1])
	}
	if counts[2] < 3*counts[0]-300 || counts[2] > 3*counts[0]+300 {
		t.Errorf("choice counts %v do not follow weights 1:0:3", counts)
	}
	const n = 20
	pts := sp.LatinHypercube(n, rng)
	seen := make([]bool, n)
	for _, p := range pts {
		if diff := cmp.Diff(sp.Snap(p), p); diff != "" {
			t.Fatalf("LHS point not canonical:\n%s", diff)
		}
		s := int(p[0] * n)
		if seen[s] {
			t.Errorf("stratum %d of the continuous dimension used twice", s)
		}
		seen[s] = true
	}
}

func TestCardinalityAndEnumerate(t *testing.T) {
	sp, _ := New(mixedDims())
	if c := sp.Cardinality(); !math.IsInf(c, 1) {
		t.Errorf("cardinality with a continuous dimension = %v, want +Inf", c)
	}
	if sp.Enumerate(1000) != nil {
		t.Error("Enumerate of an infinite space returned points")
	}
	finite, _ := New(mixedDims()[1:])
	// n: 5 × c: 3 × s: (2 specials + 4 levels) = 90.
	if c := finite.Cardinality(); c != 90 {
		t.Errorf("cardinality = %v, want 90", c)
	}
	all := finite.Enumerate(1000)
	if len(all) != 90 {
		t.Fatalf("Enumerate returned %d points, want 90", len(all))
	}
	keys := map[string]bool{}
	for _, p := range all {
		if diff := cmp.Diff(finite.Snap(p), p); diff != "" {
			t.Fatalf("enumerated point not canonical:\n%s", diff)
		}
		keys[Key(p)] = true
	}
	if len(keys) != 90 {
		t.Errorf("%d distinct points, want 90", len(keys))
	}
	if finite.Enumerate(89) != nil {
		t.Error("Enumerate above the limit returned points")
	}
}

func TestNeighbors(t *testing.T) {
	sp, _ := New(mixedDims())
	p := tunables.Point{0.3, 0, 2, 1, 0}
	got := sp.Neighbors(p)
	want := []tunables.Point{
		{0.3, 0.25, 2, 1, 0},    // n up (n down is out of range)
		{0.3, 0, 0, 1, 0},       // c → 0
		{0.3, 0, 1, 1, 0},       // c → 1
		{0.3, 0, 2, 0, 0},       // back to the range at its canonical value
		{0.3, 0, 2, 0, 2.0 / 3}, // ... and near its middle
		{0.3, 0, 2, 2, 0},       // the other special value
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Neighbors mismatch (-want +got):\n%s", diff)
	}
	if !sp.Active(tunables.Point{0, 0, 0, 0, 0.5}, 4) || sp.Active(p, 4) {
		t.Error("Active does not follow the selector")
	}
}

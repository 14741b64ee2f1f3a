package trial

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDominates(t *testing.T) {
	tests := []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 1}, []float64{2, 2}, true},
		{[]float64{1, 2}, []float64{1, 3}, true},
		{[]float64{1, 2}, []float64{1, 2}, false},
		{[]float64{1, 3}, []float64{2, 2}, false},
		{[]float64{2, 2}, []float64{1, 1}, false},
		{[]float64{5}, []float64{6}, true},
	}
	for _, tc := range tests {
		if got := Dominates(tc.a, tc.b); got != tc.want {
			t.Errorf("Dominates(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParetoFront(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		ys   [][]float64
		want []int
	}{
		{"empty", nil, nil},
		{"single objective keeps ties", [][]float64{{3}, {1}, {2}, {1}}, []int{1, 3}},
		{"trade-off", [][]float64{{1, 5}, {2, 4}, {3, 3}, {2, 6}, {4, 4}, {5, 1}}, []int{0, 1, 2, 5}},
		{"duplicates kept", [][]float64{{1, 2}, {1, 2}, {2, 2}}, []int{0, 1}},
		{"failed never on the front", [][]float64{{inf, inf}, {3, inf}, {9, 9}}, []int{2}},
		{"all failed", [][]float64{{inf}, {inf}}, nil},
		{"NaN excluded", [][]float64{{math.NaN(), 0}, {1, 1}}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParetoFront(tc.ys)); diff != "" {
				t.Errorf("Front mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFrontMatchesBruteForce compares with the O(n²) definition on random
// three-objective data with many ties.
func TestFrontMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(60)
		ys := make([][]float64, n)
		for i := range ys {
			ys[i] = []float64{float64(rng.IntN(6)), float64(rng.IntN(6)), float64(rng.IntN(6))}
		}
		var want []int
		for i := range ys {
			dominated := false
			for j := range ys {
				if j != i && Dominates(ys[j], ys[i]) {
					dominated = true
				}
			}
			if !dominated {
				want = append(want, i)
			}
		}
		if diff := cmp.Diff(want, ParetoFront(ys)); diff != "" {
			t.Fatalf("trial %d: Front mismatch (-want +got):\n%s", trial, diff)
		}
	}
}

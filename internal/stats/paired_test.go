package stats

import (
	"math"
	"testing"
)

func TestRatioChange(t *testing.T) {
	if PairedMinP(6) != 2.0/64 {
		t.Errorf("PairedMinP(6) = %v", PairedMinP(6))
	}
	// Per-block ratios 1.1, 1.2, 0.9, 1.05, 1.0: median 1.05.
	near(t, "ratio change", RatioChange([]float64{10, 10, 10, 20, 5}, []float64{11, 12, 9, 21, 5}), 0.05, 1e-12)
	lo, hi, ok := RatioChangeCI([]float64{10, 10, 10, 20, 5}, []float64{11, 12, 9, 21, 5}, 500, 0.95, 1)
	if !ok || lo > 0.05 || hi < 0.05 || lo < -0.1 || hi > 0.2 {
		t.Errorf("ratio CI [%v, %v] %v", lo, hi, ok)
	}
	if !math.IsNaN(RatioChange([]float64{0}, []float64{1})) {
		t.Error("zero baseline accepted")
	}
}

// Exact signed-rank p-values: n = 6 all positive gives 2/64; samples
// with and without ties in |log ratio| are checked against a brute-force
// enumeration of every sign pattern.
func TestSignedRank(t *testing.T) {
	x := []float64{1, 1, 1, 1, 1, 1}
	y := []float64{1.1, 1.2, 1.3, 1.4, 1.5, 1.6}
	p, n, ok := SignedRank(x, y)
	if !ok || n != 6 || math.Abs(p-2.0/64) > 1e-15 {
		t.Errorf("all up: p=%v n=%d", p, n)
	}
	// Brute force over sign patterns, with ties in |log ratio|.
	for _, ys := range [][]float64{
		{1.1, 0.9, 1.3, 1.05, 1.2, 0.8, 1.15, 1.25},
		{1.1, 1.1, 1 / 1.1, 1.2, 1.2, 0.95, 1.3, 1.3, 1 / 1.3, 1.01},
	} {
		xs := make([]float64, len(ys))
		for i := range xs {
			xs[i] = 1
		}
		p, _, _ := SignedRank(xs, ys)
		near(t, "signed-rank vs brute force", p, bruteSignedRank(ys), 1e-12)
	}
	if _, _, ok := SignedRank([]float64{0}, []float64{1}); ok {
		t.Error("zero accepted")
	}
	if p, n, _ := SignedRank([]float64{2, 3}, []float64{2, 3}); p != 1 || n != 0 {
		t.Errorf("all equal: %v %d", p, n)
	}
}

// bruteSignedRank enumerates every sign pattern of the mid-ranked
// |log y| (x = 1) and returns the two-sided p of the observed W+.
func bruteSignedRank(y []float64) float64 {
	n := len(y)
	a := make([]float64, n)
	for i := range y {
		a[i] = math.Abs(math.Log(y[i]))
	}
	rank := make([]float64, n)
	for i := range a {
		less, eq := 0, 0
		for j := range a {
			if math.Abs(a[j]-a[i]) < 1e-12 {
				eq++
			} else if a[j] < a[i] {
				less++
			}
		}
		rank[i] = float64(less) + float64(eq+1)/2
	}
	var obs float64
	for i := range y {
		if y[i] > 1 {
			obs += rank[i]
		}
	}
	var lo, hi, total float64
	for mask := 0; mask < 1<<n; mask++ {
		var w float64
		for i := range n {
			if mask&(1<<i) != 0 {
				w += rank[i]
			}
		}
		total++
		if w <= obs+1e-9 {
			lo++
		}
		if w >= obs-1e-9 {
			hi++
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/total)
}

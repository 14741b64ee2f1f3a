package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// PairedMinP is the smallest p-value the signed-rank test (or the sign
// test) can give for n unequal pairs: 2 / 2^n.
func PairedMinP(n int) float64 { return math.Min(1, 2*math.Pow(0.5, float64(n))) }

// RatioChange is the median of the per-pair ratios y_i/x_i, minus 1: the
// relative change of a paired (blocked) A/B comparison. NaN when a
// lengths differ, a sample is empty or an x_i is 0.
func RatioChange(x, y []float64) float64 {
	r, ok := ratios(x, y)
	if !ok {
		return math.NaN()
	}
	return Median(r) - 1
}

func ratios(x, y []float64) ([]float64, bool) {
	if len(x) != len(y) || len(x) == 0 {
		return nil, false
	}
	r := make([]float64, len(x))
	for i := range x {
		if x[i] == 0 {
			return nil, false
		}
		r[i] = y[i] / x[i]
	}
	return r, true
}

// RatioChangeCI is the percentile bootstrap interval at level conf of
// RatioChange, resampling the pairs (at least MinBootstrapN of them).
func RatioChangeCI(x, y []float64, resamples int, conf float64, seed uint64) (lo, hi float64, ok bool) {
	r, ok := ratios(x, y)
	if !ok || len(r) < MinBootstrapN || resamples < 1 {
		return 0, 0, false
	}
	rng := rand.New(rand.NewPCG(seed, 0x70616972))
	b := make([]float64, len(r))
	meds := make([]float64, resamples)
	for k := range meds {
		for i := range b {
			b[i] = r[rng.IntN(len(r))]
		}
		slices.Sort(b)
		meds[k] = sortedMedian(b) - 1
	}
	slices.Sort(meds)
	a := (1 - conf) / 2
	return quantile7(meds, a), quantile7(meds, 1-a), true
}

// SignedRank is the exact two-sided Wilcoxon signed-rank test of the
// pairs (x_i, y_i) on the log ratios log(y_i/x_i): under the null
// hypothesis each log ratio is symmetric about 0 (true when the two
// members of a pair are exchangeable, e.g. run in a random order within a
// block), so each rank's sign is + or - with probability 1/2. Pairs with
// equal values are left out; tied absolute log ratios get mid-ranks, and
// the distribution of W+ is computed exactly for those ranks (every
// sign pattern counted), so ties are handled exactly. ok is false when
// the lengths differ, a sample is empty, or a value is not positive.
func SignedRank(x, y []float64) (p float64, n int, ok bool) {
	if len(x) != len(y) || len(x) == 0 {
		return 0, 0, false
	}
	var d []float64
	for i := range x {
		if !(x[i] > 0) || !(y[i] > 0) {
			return 0, 0, false
		}
		if v := math.Log(y[i] / x[i]); v != 0 {
			d = append(d, v)
		}
	}
	n = len(d)
	if n == 0 {
		return 1, 0, true
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		da, db := math.Abs(d[a]), math.Abs(d[b])
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	// Doubled mid-ranks (integers), and W+ doubled.
	rank2 := make([]int, n)
	for i := 0; i < n; {
		j := i
		// Equal up to rounding (log(1.25) and -log(0.8)) is a tie.
		for j < n && math.Abs(d[idx[j]])-math.Abs(d[idx[i]]) <= 1e-12*math.Abs(d[idx[i]]) {
			j++
		}
		for k := i; k < j; k++ {
			rank2[idx[k]] = i + 1 + j // 2 × mean of ranks i+1..j
		}
		i = j
	}
	w, total := 0, 0
	for i, r := range rank2 {
		total += r
		if d[i] > 0 {
			w += r
		}
	}
	// counts[s] = number of sign patterns with doubled W+ = s, scaled by
	// 1/2 per rank so that they stay probabilities.
	dist := make([]float64, total+1)
	dist[0] = 1
	maxS := 0
	for _, r := range rank2 {
		for s := maxS; s >= 0; s-- {
			if dist[s] != 0 {
				dist[s+r] += dist[s] * 0.5
				dist[s] *= 0.5
			}
		}
		maxS += r
	}
	var lo, hi float64
	for s, v := range dist {
		if s <= w {
			lo += v
		}
		if s >= w {
			hi += v
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)), n, true
}

package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// SignTest is the exact two-sided sign test of paired values: under the
// null hypothesis each pair is as likely to rise as to fall (true when
// the two members of a pair are exchangeable, e.g. run in a random order
// within a block). Pairs that are equal are left out. p = 2·P(B <=
// min(up, down)) with B ~ Binomial(n, 1/2), at most 1. ok is false when
// the lengths differ or a sample is empty.
func SignTest(x, y []float64) (p float64, up, down int, ok bool) {
	if len(x) != len(y) || len(x) == 0 {
		return 0, 0, 0, false
	}
	for i := range x {
		switch {
		case y[i] > x[i]:
			up++
		case y[i] < x[i]:
			down++
		}
	}
	n := up + down
	if n == 0 {
		return 1, 0, 0, true
	}
	k := min(up, down)
	// P(B = i) = C(n, i) / 2^n, built term by term.
	term := math.Pow(0.5, float64(n))
	tail := term
	for i := 0; i < k; i++ {
		term = term * float64(n-i) / float64(i+1)
		tail += term
	}
	return math.Min(1, 2*tail), up, down, true
}

// SignTestMinP is the smallest p-value the sign test can give for n
// pairs: 2 / 2^n.
func SignTestMinP(n int) float64 { return math.Min(1, 2*math.Pow(0.5, float64(n))) }

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

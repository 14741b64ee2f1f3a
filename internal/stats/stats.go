// Package stats holds the statistics bench ci and bench compare use to
// tell a real change from noise: the Mann–Whitney U test (as Go's
// benchstat computes it, through golang.org/x/perf's benchmath, or as R's
// wilcox.test does), a distribution-free confidence interval of the
// median, a bootstrap confidence interval of the relative difference of
// two medians, and change-point detection over a series.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Median returns the median of xs (NaN for none). xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedMedian(s)
}

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MannWhitney is the result of a two-sided Mann–Whitney U test.
type MannWhitney struct {
	// U is the statistic of the first sample (R's W): the number of pairs
	// (x, y) with x > y, ties counting one half.
	U float64
	// P is the two-sided p-value.
	P float64
	// Exact tells whether P comes from the exact distribution of U (no
	// ties, both samples below 50) or from the normal approximation with
	// tie and continuity corrections.
	Exact bool
}

// exactLimit is the sample size from which the normal approximation is
// used (R's wilcox.test: exact when both samples have fewer than 50
// values and there are no ties).
const exactLimit = 50

// MannWhitneyU runs the two-sided Mann–Whitney U (Wilcoxon rank-sum) test
// of x against y, computed as R's wilcox.test(x, y) does by default: the
// exact p-value when both samples have fewer than 50 values and no value
// is tied, else the normal approximation with the tie correction of the
// variance and a continuity correction of 0.5. ok is false when a sample
// is empty or holds a NaN.
func MannWhitneyU(x, y []float64) (r MannWhitney, ok bool) {
	m, n := len(x), len(y)
	if m == 0 || n == 0 {
		return r, false
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, m+n)
	for _, v := range x {
		if math.IsNaN(v) {
			return r, false
		}
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		if math.IsNaN(v) {
			return r, false
		}
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Mid-ranks, and the tie correction sum of t^3 - t.
	var rankX, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		t := float64(j - i)
		rank := float64(i+1+j) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].first {
				rankX += rank
			}
		}
		ties += t*t*t - t
		i = j
	}
	fm := float64(m)
	r.U = rankX - fm*(fm+1)/2
	if ties == 0 && m < exactLimit && n < exactLimit {
		r.Exact = true
		r.P = exactP(r.U, m, n)
		return r, true
	}
	r.P = normalP(r.U, m, n, ties)
	return r, true
}

// normalP is the two-sided p-value of U from the normal approximation,
// with ties the sum of t^3 - t over groups of tied values (R's
// wilcox.test with correct = TRUE).
func normalP(u float64, m, n int, ties float64) float64 {
	fm, fn := float64(m), float64(n)
	N := fm + fn
	sigma := math.Sqrt(fm * fn / 12 * ((N + 1) - ties/(N*(N-1))))
	z := u - fm*fn/2
	if sigma == 0 {
		// Every value is the same: no evidence of a difference.
		return 1
	}
	corr := 0.5
	if z < 0 {
		corr = -0.5
	} else if z == 0 {
		corr = 0
	}
	z = (z - corr) / sigma
	return math.Min(1, 2*math.Min(normCDF(z), normCDF(-z)))
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// uDist returns the probability of each value 0..m*n of U for samples of
// m and n values without ties: the count of arrangements with U = u is
// the coefficient of q^u in the Gaussian binomial [m+n choose m], built
// by the recurrence f(u; i, j) = f(u-j; i-1, j) + f(u; i, j-1).
func uDist(m, n int) []float64 {
	// prev[j] holds the counts for (i-1, j), cur[j] for (i, j).
	prev := make([][]float64, n+1)
	for j := range prev {
		prev[j] = []float64{1} // i = 0: one arrangement, U = 0
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1}
		for j := 1; j <= n; j++ {
			c := make([]float64, i*j+1)
			for u, v := range cur[j-1] { // f(u; i, j-1)
				c[u] += v
			}
			for u, v := range prev[j] { // f(u-j; i-1, j)
				c[u+j] += v
			}
			cur[j] = c
		}
		prev = cur
	}
	counts := prev[n]
	var total float64
	for _, v := range counts {
		total += v
	}
	for u := range counts {
		counts[u] /= total
	}
	return counts
}

// exactP is the two-sided exact p-value of U (R: the smaller tail,
// doubled, at most 1).
func exactP(u float64, m, n int) float64 {
	d := uDist(m, n)
	k := int(math.Round(u))
	var lo, hi float64
	for i, p := range d {
		if i <= k {
			lo += p
		}
		if i >= k {
			hi += p
		}
	}
	return math.Min(1, 2*math.Min(lo, hi))
}

// MinP is the smallest two-sided p-value the Mann–Whitney test can give
// for samples of m and n values (2 / C(m+n, m)): when it is not below
// alpha, no difference can be called significant, whatever the data.
func MinP(m, n int) float64 {
	if m == 0 || n == 0 {
		return 1
	}
	// log C(m+n, m)
	lg := func(k int) float64 { v, _ := math.Lgamma(float64(k) + 1); return v }
	return math.Min(1, 2*math.Exp(-(lg(m+n)-lg(m)-lg(n))))
}

// MedianCI returns the distribution-free confidence interval of the
// median at level conf (e.g. 0.95) from order statistics: the widest
// inner pair (x_(k), x_(n+1-k)) whose binomial coverage is at least conf.
// ok is false when even the full range covers less (fewer than 6 values
// at 95%), which benchstat shows as "± ∞".
func MedianCI(xs []float64, conf float64) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return 0, 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// coverage(k) = P(k <= B <= n-k), B ~ Binomial(n, 1/2).
	pmf := make([]float64, n+1)
	lc := 0.0 // log C(n, i)
	for i := 0; i <= n; i++ {
		if i > 0 {
			lc += math.Log(float64(n-i+1)) - math.Log(float64(i))
		}
		pmf[i] = math.Exp(lc - float64(n)*math.Ln2)
	}
	best := 0
	for k := 1; k <= (n+1)/2; k++ {
		var cov float64
		for i := k; i <= n-k; i++ {
			cov += pmf[i]
		}
		if cov >= conf {
			best = k
		} else {
			break
		}
	}
	if best == 0 {
		return s[0], s[n-1], false
	}
	return s[best-1], s[n-best], true
}

// Bootstrap resamples for RelChangeCI.
const DefaultResamples = 2000

// MinBootstrapN is the fewest values per sample RelChangeCI makes an
// interval from: with one or two values, resampling them gives an
// interval that looks tight but means nothing.
const MinBootstrapN = 3

// RelChangeCI returns the percentile bootstrap confidence interval at
// level conf of the relative change of the medians, (median(y) -
// median(x)) / |median(x)|, from resamples draws of each sample with
// replacement: the (1-conf)/2 and (1+conf)/2 quantiles (R's type 7) of
// the resampled changes. The generator is seeded with seed, so the same
// data give the same interval. ok is false when a sample has fewer than
// MinBootstrapN values or a resampled median of x is zero.
func RelChangeCI(x, y []float64, resamples int, conf float64, seed uint64) (lo, hi float64, ok bool) {
	changes, ok := bootChanges(x, y, resamples, seed)
	if !ok {
		return 0, 0, false
	}
	a := (1 - conf) / 2
	return quantile7(changes, a), quantile7(changes, 1-a), true
}

// bootChanges returns the sorted resampled relative changes of the
// medians.
func bootChanges(x, y []float64, resamples int, seed uint64) ([]float64, bool) {
	if len(x) < MinBootstrapN || len(y) < MinBootstrapN || resamples < 1 {
		return nil, false
	}
	rng := rand.New(rand.NewPCG(seed, 0x626f6f74))
	bx, by := make([]float64, len(x)), make([]float64, len(y))
	changes := make([]float64, 0, resamples)
	for range resamples {
		for i := range bx {
			bx[i] = x[rng.IntN(len(x))]
		}
		for i := range by {
			by[i] = y[rng.IntN(len(y))]
		}
		slices.Sort(bx)
		slices.Sort(by)
		mx := sortedMedian(bx)
		if mx == 0 {
			return nil, false
		}
		changes = append(changes, (sortedMedian(by)-mx)/math.Abs(mx))
	}
	slices.Sort(changes)
	return changes, true
}

// quantile7 is the p quantile of sorted s by linear interpolation
// between order statistics (R's type 7).
func quantile7(s []float64, p float64) float64 {
	h := p * float64(len(s)-1)
	i := int(math.Floor(h))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// RelChange is (median(y) - median(x)) / |median(x)| (NaN when the
// median of x is zero or a sample is empty).
func RelChange(x, y []float64) float64 {
	mx, my := Median(x), Median(y)
	if mx == 0 || math.IsNaN(mx) || math.IsNaN(my) {
		return math.NaN()
	}
	return (my - mx) / math.Abs(mx)
}

// NormQuantile is the p quantile of the standard normal distribution.
func NormQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// ChangePoint is a level shift found in a series: the series changes
// between Index-1 and Index (Index is the first point of the new level).
type ChangePoint struct {
	Index int
	// P is the permutation p-value of the split; Q its E-statistic.
	P, Q float64
	// Before and After are the medians of the segments on either side
	// (between the neighbouring change points).
	Before, After float64
}

// ChangePointOptions tune ChangePoints.
type ChangePointOptions struct {
	// Alpha: a split is kept when its permutation p-value is below it
	// (default 0.01).
	Alpha float64
	// Permutations per test (default 499).
	Permutations int
	// MinSize is the fewest points of a segment (default 5).
	MinSize int
	// Seed seeds the permutations: the same series gives the same answer.
	Seed uint64
}

func (o *ChangePointOptions) defaults() {
	if o.Alpha <= 0 {
		o.Alpha = 0.01
	}
	if o.Permutations <= 0 {
		o.Permutations = 499
	}
	if o.MinSize <= 0 {
		o.MinSize = 5
	}
}

// ChangePoints finds level shifts in xs by E-divisive means (Matteson &
// James 2014, the method of MongoDB's signal processing, Hunter and
// Otava) with a permutation significance test, hierarchically: the split
// τ of a segment maximizing the divergence
//
//	Q(τ) = m(n-m)/n · (2/(m(n-m)) Σ|x_i - y_j| - 1/C(m,2) Σ|x_i - x_k| - 1/C(n-m,2) Σ|y_j - y_k|)
//
// (x the m points before τ, y the n-m after, exponent 1) is tested by
// recomputing the largest Q over Permutations random shuffles of the
// segment: p = (1 + #{Q_perm >= Q}) / (1 + Permutations). A split with
// p < Alpha is kept, and the two halves are searched in turn; the search
// stops when no segment has a significant split. The result is sorted by
// index.
func ChangePoints(xs []float64, o ChangePointOptions) []ChangePoint {
	o.defaults()
	rng := rand.New(rand.NewPCG(o.Seed, 0x65646976))
	var found []ChangePoint
	type seg struct{ lo, hi int }
	queue := []seg{{0, len(xs)}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		part := xs[s.lo:s.hi]
		tau, q := bestSplit(part, o.MinSize)
		if tau < 0 {
			continue
		}
		// Permutation test of the largest divergence.
		perm := slices.Clone(part)
		exceed := 0
		for range o.Permutations {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			if _, qp := bestSplit(perm, o.MinSize); qp >= q {
				exceed++
			}
		}
		p := float64(1+exceed) / float64(1+o.Permutations)
		if p >= o.Alpha {
			continue
		}
		found = append(found, ChangePoint{Index: s.lo + tau, P: p, Q: q})
		queue = append(queue, seg{s.lo, s.lo + tau}, seg{s.lo + tau, s.hi})
	}
	slices.SortFunc(found, func(a, b ChangePoint) int { return a.Index - b.Index })
	for i := range found {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = found[i-1].Index
		}
		if i+1 < len(found) {
			hi = found[i+1].Index
		}
		found[i].Before = Median(xs[lo:found[i].Index])
		found[i].After = Median(xs[found[i].Index:hi])
	}
	return found
}

// bestSplit returns the split τ (minSize <= τ <= n-minSize) of xs with the
// largest Q(τ), and that Q; τ = -1 when xs is too short. It is O(n²):
// the within-segment sums of distances are updated as τ moves.
func bestSplit(xs []float64, minSize int) (int, float64) {
	n := len(xs)
	if n < 2*minSize || minSize < 2 {
		return -1, 0
	}
	// rowSum[i] = Σ_j |x_i - x_j|; total = Σ_{i<j} |x_i - x_j|.
	var total float64
	// left[τ] = Σ_{i<j<τ} |x_i - x_j|, built incrementally.
	left := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		var add float64
		for i := 0; i < j-1; i++ {
			add += math.Abs(xs[i] - xs[j-1])
		}
		left[j] = left[j-1] + add
	}
	total = left[n]
	// right[τ] = Σ_{τ<=i<j} |x_i - x_j|.
	right := make([]float64, n+1)
	for j := n - 1; j >= 0; j-- {
		var add float64
		for i := j + 1; i < n; i++ {
			add += math.Abs(xs[i] - xs[j])
		}
		right[j] = right[j+1] + add
	}
	best, bestQ := -1, math.Inf(-1)
	for tau := minSize; tau <= n-minSize; tau++ {
		m, k := float64(tau), float64(n-tau)
		between := total - left[tau] - right[tau]
		e := 2*between/(m*k) - left[tau]/(m*(m-1)/2) - right[tau]/(k*(k-1)/2)
		q := m * k / float64(n) * e
		if q > bestQ {
			best, bestQ = tau, q
		}
	}
	return best, bestQ
}

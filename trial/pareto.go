package trial

import (
	"math"
	"sort"
)

// Dominates reports whether a dominates b (minimization): a is no worse in
// every objective and strictly better in at least one.
func Dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// ParetoFront returns the indices, in increasing order, of the rows of ys that no
// other row dominates. Rows with a NaN or +Inf value (failed trials) are
// never on the front. Equal rows are all kept.
func ParetoFront(ys [][]float64) []int {
	idx := make([]int, 0, len(ys))
	for i, y := range ys {
		if finite(y) {
			idx = append(idx, i)
		}
	}
	// Sort lexicographically: a row can only be dominated by rows before it.
	sort.SliceStable(idx, func(a, b int) bool { return Less(ys[idx[a]], ys[idx[b]]) })
	var front []int
	for _, i := range idx {
		dominated := false
		for _, j := range front {
			if Dominates(ys[j], ys[i]) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	sort.Ints(front)
	return front
}

func finite(y []float64) bool {
	for _, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return false
		}
	}
	return true
}

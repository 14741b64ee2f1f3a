// Package suggest finds the closest of a set of names to a mistyped one,
// for "did you mean" hints in errors and warnings.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate nearest to name by edit distance
// (insertions, deletions, substitutions and swaps of adjacent letters,
// case-insensitive), when it is near enough to be a likely typo: at most
// a third of the longer name's length, and at least one edit allowed. An
// exact match is not a suggestion. Ties go to the earlier candidate.
func Closest(name string, candidates []string) (string, bool) {
	best, bestD := "", -1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := distance(ln, strings.ToLower(c))
		limit := max(len([]rune(name)), len([]rune(c))) / 3
		if limit < 1 {
			limit = 1
		}
		if d > limit {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// Hint returns ` (did you mean "X"?)` for the closest candidate, or "".
func Hint(name string, candidates []string) string {
	if c, ok := Closest(name, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// distance is the optimal string alignment distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j]: distance between ra[:i] and rb[:j]; three rows suffice.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Distance is the case-insensitive edit distance Closest uses (Damerau–
// Levenshtein: an insertion, deletion, substitution or swap of adjacent
// characters is one edit).
func Distance(a, b string) int { return distance(strings.ToLower(a), strings.ToLower(b)) }

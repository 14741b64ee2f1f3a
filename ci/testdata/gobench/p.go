package p

import "sort"

// Factor scales Sort's work: the "new" build sets 1.1 (10% more work).
var Factor = 1.0

func Work(n int) int {
	s := make([]int, int(float64(n)*Factor))
	for i := range s {
		s[i] = (i * 7919) % 1000
	}
	sort.Ints(s)
	return s[len(s)/2]
}

func Same(n int) int {
	t := 0
	for i := 0; i < n; i++ {
		t += i % 13
	}
	return t
}

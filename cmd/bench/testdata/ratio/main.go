// ratio times a fixed workload against a reference workload in the same
// process, in alternating chunks, and prints the median ratio of the two
// times: work_ratio. Load on the machine slows both alike, so the ratio
// stays put; more work (the factor in $RATIO_FACTOR_FILE) raises it.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

var sink uint64

func spin(n int) {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink += x
}

func main() {
	factor := 1.0
	if f := os.Getenv("RATIO_FACTOR_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if factor, err = strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	const n, rounds = 200000, 151
	work := int(float64(n) * factor)
	ratios := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		var tRef, tWork time.Duration
		if r%2 == 0 {
			t0 := time.Now()
			spin(n)
			t1 := time.Now()
			spin(work)
			tRef, tWork = t1.Sub(t0), time.Since(t1)
		} else {
			t0 := time.Now()
			spin(work)
			t1 := time.Now()
			spin(n)
			tWork, tRef = t1.Sub(t0), time.Since(t1)
		}
		ratios = append(ratios, float64(tWork)/float64(tRef))
	}
	slices.Sort(ratios)
	fmt.Printf("work_ratio=%.6f\n", ratios[len(ratios)/2])
	fmt.Fprintf(os.Stderr, "sink %d\n", sink)
}

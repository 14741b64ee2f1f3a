// Command work is the workload of scripts/bench-ci-ab.sh: a fixed amount
// of CPU work (SHA-256 over a buffer, -n rounds, times -factor), so that
// -factor 1.1 is a real 10% slowdown of the code under test.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
)

func main() {
	n := flag.Int("n", 20000, "rounds of work")
	factor := flag.Float64("factor", 1, "scale of the work (1.1: 10% more)")
	flag.Parse()
	buf := make([]byte, 4096)
	sum := sha256.Sum256(buf)
	for i := 0; i < int(float64(*n)**factor); i++ {
		copy(buf, sum[:])
		sum = sha256.Sum256(buf)
	}
	if sum[0] == 0 && sum[1] == 0 && sum[2] == 0 && sum[3] == 0 {
		fmt.Fprintln(os.Stderr, "unlikely")
	}
}

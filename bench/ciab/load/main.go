// Command load is the load generator of scripts/bench-ci-ab.sh: it
// changes the machine's load every -period (a random number of busy
// goroutines from 0 to -max, each spinning on CPU), so that load moves
// between and during the runs of a bench ci job. It is bounded (at most
// -max busy goroutines, GOMAXPROCS = -max) and local, and it stops
// itself after -duration, or when its parent process exits.
package main

import (
	"flag"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

func main() {
	max := flag.Int("max", 2, "most busy goroutines")
	period := flag.Duration("period", 700*time.Millisecond, "how often the load changes")
	duration := flag.Duration("duration", 15*time.Minute, "stop after this long")
	flag.Parse()
	runtime.GOMAXPROCS(*max)
	parent := os.Getppid()
	var level atomic.Int64
	for w := range *max {
		go func() {
			x := 0
			for {
				if int64(w) < level.Load() {
					for i := 0; i < 1_000_000; i++ {
						x += i ^ x
					}
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	end := time.Now().Add(*duration)
	for time.Now().Before(end) && os.Getppid() == parent {
		level.Store(int64(rand.IntN(*max + 1)))
		// Some periods are short, some long: load changes during runs too.
		time.Sleep(time.Duration(float64(*period) * (0.3 + 1.4*rand.Float64())))
	}
}

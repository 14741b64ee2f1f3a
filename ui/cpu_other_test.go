//go:build !unix

package ui

import "time"

// cpu is not measured here (the benchmark reports 0 cpu-s/op).
func cpu() time.Duration { return 0 }

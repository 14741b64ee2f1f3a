//go:build !linux

package devices

import "runtime"

// pinSupported: LocalExec pins commands to cores on Linux only.
const pinSupported = false

// allowedCPUs returns cores 0..NumCPU-1.
var allowedCPUs = func() []int { return firstCPUs(runtime.NumCPU()) }

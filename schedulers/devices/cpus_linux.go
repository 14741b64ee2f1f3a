//go:build linux

package devices

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// pinSupported: LocalExec can pin commands to cores here.
const pinSupported = true

// allowedCPUs returns the cores bench may run on, in order: its affinity
// mask (a container or taskset may restrict it), else 0..NumCPU-1.
var allowedCPUs = func() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return firstCPUs(runtime.NumCPU())
	}
	var cores []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cores = append(cores, c)
		}
	}
	return cores
}

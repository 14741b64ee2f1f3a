//go:build linux

package local

import (
	"os"
	"syscall"
	"time"
)

// usage returns the CPU times and peak resident memory of a waited-for
// process, from its wait4 rusage: they include the process's descendants
// that were waited for (by it or by their own parents) before it ended.
// On Linux ru_maxrss is in KiB.
func usage(ps *os.ProcessState) (user, sys time.Duration, maxRSSBytes int64) {
	if ps == nil {
		return 0, 0, 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), int64(ru.Maxrss) * 1024
}

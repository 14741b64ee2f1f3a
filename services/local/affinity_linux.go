//go:build linux

package local

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// maxCore is one past the highest core a mask can name.
const maxCore = len(unix.CPUSet{}) * 64

// checkCores validates the cores a line is pinned to.
func checkCores(cores []int) error {
	for _, c := range cores {
		if c < 0 || c >= maxCore {
			return fmt.Errorf("local exec: cannot pin to CPU core %d: cores are numbered 0 to %d", c, maxCore-1)
		}
	}
	return nil
}

// startPinned starts cmd with its CPU affinity set to cores (none: not
// pinned). The mask is set on the OS thread that forks, before the fork,
// so the shell has it from its first instruction and passes it on to
// everything it starts: no window in which a child escapes it, and no
// external taskset (nor a different argv) needed. The thread gets its own
// mask back before it runs any other goroutine; if that fails it stays
// locked, and the runtime ends it (or, for the main thread, parks it for
// good) when the goroutine exits, so the mask never reaches the rest of
// bench.
func startPinned(cmd *exec.Cmd, cores []int) error {
	if len(cores) == 0 {
		return cmd.Start()
	}
	var set unix.CPUSet
	for _, c := range cores {
		set.Set(c) // checked by checkCores
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			done <- fmt.Errorf("cannot read the CPU affinity: %w", err)
			return // the thread stays locked: see above
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- fmt.Errorf("cannot pin to CPU cores %s: %w", coreList(cores), err)
			return
		}
		err := cmd.Start()
		if unix.SchedSetaffinity(0, &old) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

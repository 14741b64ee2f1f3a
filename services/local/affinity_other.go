//go:build !linux

package local

import (
	"errors"
	"os/exec"
)

// checkCores rejects pinning: it needs Linux's sched_setaffinity.
func checkCores(cores []int) error {
	if len(cores) > 0 {
		return errors.New("local exec: pinning commands to CPU cores (pin_cores) is supported on Linux only")
	}
	return nil
}

// startPinned starts cmd; checkCores has rejected any cores.
func startPinned(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

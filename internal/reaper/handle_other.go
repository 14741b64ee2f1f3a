//go:build !linux

package reaper

import "syscall"

// handle signals one process by pid (no pidfds outside Linux; without
// /proc the reaper finds nothing to signal anyway).
type handle struct {
	pid int
}

func openHandle(pid int) (handle, error) { return handle{pid: pid}, nil }

func (h handle) signal(sig syscall.Signal) error { return syscall.Kill(h.pid, sig) }

func (h handle) close() {}

package reaper

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// handle signals one process: through a pidfd where the kernel has them
// (Linux 5.3+), so that a signal never reaches a process that took the pid
// of one that ended; by pid otherwise.
type handle struct {
	pid, fd int
}

// openHandle opens a handle on pid. The caller checks afterwards that pid
// is still the process it read (its start time): a pidfd refers to the
// process that had the pid when it was opened. Its error means that pid
// has ended.
func openHandle(pid int) (handle, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		return handle{pid: pid, fd: fd}, nil
	case errors.Is(err, syscall.ESRCH):
		return handle{}, err
	}
	return handle{pid: pid, fd: -1}, nil // no pidfds here (ENOSYS, a seccomp filter, out of descriptors)
}

func (h handle) signal(sig syscall.Signal) error {
	if h.fd >= 0 {
		return unix.PidfdSendSignal(h.fd, sig, nil, 0)
	}
	return syscall.Kill(h.pid, sig)
}

func (h handle) close() {
	if h.fd >= 0 {
		_ = unix.Close(h.fd)
	}
}

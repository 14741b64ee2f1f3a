//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// inForeground reports whether this process is in the foreground process
// group of terminal f: a background job (bench … &) that reads its
// terminal is stopped by SIGTTIN, so it must not prompt.
func inForeground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}

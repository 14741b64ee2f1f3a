package reaper

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrExiting is what Start returns once this process has begun to exit:
// no trial process may start after the exit's sweep.
var ErrExiting = errors.New("bench is exiting: no new process is started")

// exitMu orders process starts against the exit paths. Starts hold it
// shared; the exit paths (KillOwnAndExit, Finish) take it exclusively and
// set exiting, so that a start is either done before the exit's sweep
// (and the sweep sees the process and its mark) or refused. The two exit
// paths exclude each other too: a second Ctrl-C's kill-and-exit and the
// normal exit's release can never interleave.
var (
	exitMu  sync.RWMutex
	exiting bool
)

// Start runs start (which starts cmd and returns once it runs, as
// cmd.Start does) unless this process has begun to exit. A started process
// is recorded until Done: the exit paths kill it by its pid as well as by
// its mark, since exec.Cmd.Start can return while the kernel is still
// setting up the new program's memory (its /proc environment reads as
// empty for an instant, when a sweep by mark would miss it). Such a
// process cannot have children yet: the ones it starts later carry the
// mark. (Start used to wait until the mark showed in /proc, about 0.1 ms
// of CPU per process and sometimes a 0.5 ms sleep.)
func Start(cmd *exec.Cmd, start func() error) error {
	exitMu.RLock()
	defer exitMu.RUnlock()
	if exiting {
		return ErrExiting
	}
	if err := start(); err != nil {
		return err
	}
	startedMu.Lock()
	started[cmd.Process.Pid] = struct{}{}
	startedMu.Unlock()
	return nil
}

// Done forgets a process Start started, once it has been waited for.
func Done(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	startedMu.Lock()
	delete(started, cmd.Process.Pid)
	startedMu.Unlock()
}

var (
	startedMu sync.Mutex
	started   = map[int]struct{}{} // pids Start started, until Done
)

// killStarted kills the processes Start started that are still this
// process's children (one that was waited for just now, before Done, may
// have given its pid to a process of someone else), each with its process
// group when it leads one. Called with exitMu held, so no Start runs.
func killStarted() []int {
	startedMu.Lock()
	pids := make([]int, 0, len(started))
	for pid := range started {
		pids = append(pids, pid)
	}
	startedMu.Unlock()
	me := os.Getpid()
	var killed []int
	for _, pid := range pids {
		if ppid(pid) != me {
			continue
		}
		if _, pgrp, _, err := stat(pid); err == nil && pgrp == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// KillOwnAndExit is for an exit that cannot wait (a second Ctrl-C): from
// now on no marked process starts, every running one is killed, and a
// record that a normal exit's Release may already have written is removed
// (nothing is left running on purpose). The caller exits right after; the
// lock is never released, so that no other exit path runs meanwhile.
func KillOwnAndExit() (Killed, error) {
	exitMu.Lock()
	exiting = true
	pids := killStarted()
	k, err := KillOwn()
	k.PIDs = mergePIDs(k.PIDs, pids)
	if me, serr := Self(); serr == nil {
		_ = os.Remove(filepath.Join(StateDir(), me.String()))
	}
	return k, err
}

// Finish is for a normal exit. With keep (the environment is left set up
// on purpose: --no-teardown), processes that still run are recorded as
// left on purpose (Release); without it, every process this bench marked
// is killed: background jobs of trials that ended normally (`sleep 300 &`,
// setsid children) do not outlive the experiment. Either way no marked
// process starts afterwards.
func Finish(keep bool) (Killed, error) {
	exitMu.Lock()
	defer exitMu.Unlock()
	if exiting {
		return Killed{}, nil
	}
	exiting = true
	if keep {
		return Killed{}, Release()
	}
	pids := killStarted()
	k, err := KillOwn()
	k.PIDs = mergePIDs(k.PIDs, pids)
	return k, err
}

// mergePIDs adds the pids of b that a are missing.
func mergePIDs(a, b []int) []int {
	for _, pid := range b {
		if !slices.Contains(a, pid) {
			a = append(a, pid)
		}
	}
	return a
}

// ppid is a process's parent pid from /proc/PID/stat (0 when it cannot be
// read: the process is gone).
func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procDir, pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1]) // f[1] is field 4, the parent's pid
	return n
}

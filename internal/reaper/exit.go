package reaper

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
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
// cmd.Start does) unless this process has begun to exit. When cmd carries
// the owner mark, Start returns once the mark shows in the process's
// /proc environment: exec.Cmd.Start returns while the kernel may still be
// setting up the new program's memory (its environment reads as empty for
// an instant), and an exit's sweep must not miss it.
func Start(cmd *exec.Cmd, start func() error) error {
	exitMu.RLock()
	defer exitMu.RUnlock()
	if exiting {
		return ErrExiting
	}
	if err := start(); err != nil {
		return err
	}
	if !slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, EnvVar+"=") }) {
		return nil
	}
	pid := cmd.Process.Pid
	for i := 0; i < 2000; i++ { // at most about a second
		if markOf(pid) != "" {
			return nil
		}
		if state, _, _, err := stat(pid); err != nil || state == 'Z' || state == 'X' {
			return nil // it has ended already
		}
		time.Sleep(500 * time.Microsecond)
	}
	return nil
}

// KillOwnAndExit is for an exit that cannot wait (a second Ctrl-C): from
// now on no marked process starts, every running one is killed, and a
// record that a normal exit's Release may already have written is removed
// (nothing is left running on purpose). The caller exits right after; the
// lock is never released, so that no other exit path runs meanwhile.
func KillOwnAndExit() (Killed, error) {
	exitMu.Lock()
	exiting = true
	k, err := KillOwn()
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
	return KillOwn()
}

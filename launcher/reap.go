package launcher

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/benchtune/bench/internal/reaper"
	"github.com/benchtune/bench/services/local"
)

// ReapStale cleans up after bench processes that died without stopping
// their trials (SIGKILL, the OOM killer): it kills every process still
// running for them, grandchildren and background jobs included, then
// removes their temp folders. Call it before running any trial, so that a
// resumed trial never runs beside the orphan of its last attempt. It
// returns a sentence for the user when it did anything ("" otherwise);
// its failures are logged, never fatal.
func ReapStale() string {
	k, err := reaper.KillStale()
	if err != nil {
		slog.Warn("cannot look for processes left by a bench that died", "err", err)
	}
	dirs, err := local.RemoveStaleTempDirs()
	if err != nil {
		slog.Warn("cannot remove temp folders left by a bench that died", "err", err)
	}
	var parts []string
	if len(k.PIDs) > 0 {
		parts = append(parts, fmt.Sprintf("killed %d processes left running by bench processes that died (%s)", len(k.PIDs), strings.Join(k.Owners, ", ")))
		slog.Info("killed stale trial processes", "pids", k.PIDs, "owners", k.Owners)
	}
	if len(dirs) > 0 {
		parts = append(parts, fmt.Sprintf("removed %d temp folders they left", len(dirs)))
		slog.Info("removed stale temp folders", "dirs", dirs)
	}
	return strings.Join(parts, "; ")
}

// ForceStop is for an exit that cannot wait (a second Ctrl-C): it kills
// every process this bench started for trials, teardown's included, and
// removes its temp folders. From the moment it starts, no trial process
// starts and no normal exit (Finish) runs: the caller exits right after.
func ForceStop() {
	_, _ = reaper.KillOwnAndExit()
	local.RemoveOwnTempDirs()
}

// Release is for a normal exit: processes this bench started that still
// run (a server kept with --no-teardown) are recorded as left on purpose,
// so that the next bench does not kill them as a dead bench's
// (reaper.Release).
func Release() {
	if err := reaper.Release(); err != nil {
		slog.Warn("cannot record the processes left running", "err", err)
	}
}

// Guard watches over the processes this bench starts for trials, from its
// start to its exit: a watchdog process kills them if bench dies without
// a chance to (SIGKILL, the OOM killer), and Finish stops them at a normal
// exit unless they are kept on purpose.
type Guard struct {
	dog *reaper.Watchdog
}

// StartGuard starts the watchdog: exe is the bench binary, which runs
// Watchdog when its first argument is reaper.WatchdogArg. A watchdog that
// cannot start is logged: the next bench still reaps (ReapStale).
func StartGuard(exe string) *Guard {
	dog, err := reaper.StartWatchdog(exe)
	if err != nil {
		slog.Warn("cannot start the watchdog that stops the trials' processes if bench is killed", "err", err)
	}
	return &Guard{dog: dog}
}

// Finish is for a normal exit. With keep (teardown is off: --no-teardown
// or the scheduler's "teardown": false), processes this bench started that
// still run are recorded as left on purpose, so that neither the watchdog
// nor a later bench kills them (reaper.Release). Without it, every process
// bench marked is killed: background jobs of trials that ended normally do
// not outlive the experiment. A nil Guard is fine.
func (g *Guard) Finish(keep bool) {
	k, err := reaper.Finish(keep)
	if err != nil {
		slog.Warn("cannot stop or record the processes left running", "err", err)
	}
	if len(k.PIDs) > 0 {
		slog.Info("killed processes the trials left running", "pids", k.PIDs)
	}
	if keep && g != nil {
		g.dog.Keep()
	}
}

// Watchdog is the body of `bench __reaper-watchdog MARK`: it waits for its
// bench (the other end of stdin) to exit, then kills what that bench
// marked, unless bench left it running on purpose, and removes that
// bench's temp folders. It ignores the terminal's signals.
func Watchdog(mark string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT, syscall.SIGTSTP)
	k, err := reaper.Watch(mark, os.Stdin)
	if err != nil {
		return 1
	}
	if len(k.PIDs) > 0 {
		local.RemoveTempDirsOf(mark)
	}
	return 0
}

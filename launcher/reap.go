package launcher

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
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
	if len(k.PIDs) > 0 {
		slog.Info("killed stale trial processes", "pids", k.PIDs, "owners", k.Owners)
	}
	if len(dirs) > 0 {
		slog.Info("removed stale temp folders", "dirs", dirs)
	}
	return reapMessage(len(k.PIDs), k.Owners, dirs)
}

// reapMessage says what ReapStale did, naming whose leftovers they were:
// the bench processes that died (by process id, from their owner marks)
// and, for temp folders, what they were made for (the environments'
// trials, by environment name).
func reapMessage(killed int, owners []string, dirs []string) string {
	var parts []string
	if killed > 0 {
		var pids []string
		for _, m := range owners {
			if o, ok := reaper.ParseOwner(m); ok {
				pids = appendNew(pids, strconv.Itoa(o.PID))
			}
		}
		parts = append(parts, fmt.Sprintf("killed %s left running by %s", plural(killed, "process", "processes"), deadBenches(pids)))
	}
	if len(dirs) > 0 {
		var pids, names []string
		for _, d := range dirs {
			if name, o, ok := local.TempDirOwner(d); ok {
				pids = appendNew(pids, strconv.Itoa(o.PID))
				names = appendNew(names, strconv.Quote(name))
			}
		}
		msg := fmt.Sprintf("removed %s left by %s", plural(len(dirs), "temp folder", "temp folders"), deadBenches(pids))
		if len(names) > 0 {
			msg += fmt.Sprintf(" (made for %s)", strings.Join(names, ", "))
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// deadBenches names the bench processes that died: "bench process 42,
// which died", "bench processes 42 and 43, which died" (five at most, then
// how many others).
func deadBenches(pids []string) string {
	const shown = 5
	switch {
	case len(pids) == 0:
		return "bench processes that died"
	case len(pids) == 1:
		return "bench process " + pids[0] + ", which died"
	case len(pids) > shown:
		return fmt.Sprintf("bench processes %s and %d others, which died", strings.Join(pids[:shown], ", "), len(pids)-shown)
	}
	return "bench processes " + strings.Join(pids[:len(pids)-1], ", ") + " and " + pids[len(pids)-1] + ", which died"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func appendNew(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
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
	switch {
	case g == nil:
	case keep:
		g.dog.Keep()
	case err == nil:
		// Every marked process is gone and none starts any more: the
		// watchdog need not sweep again after the exit.
		g.dog.Done()
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

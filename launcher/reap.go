package launcher

import (
	"fmt"
	"log/slog"
	"strings"

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
// removes its temp folders.
func ForceStop() {
	_, _ = reaper.KillOwn()
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

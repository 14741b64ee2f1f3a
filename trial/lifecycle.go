package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// This file holds the decisions of a trial's lifecycle that every runner
// kind (local runners, engine jobs, network workers, the passive desk),
// the scheduler, bench serve and bench exec-trial make: each is one
// function here, called from every path, so that they cannot disagree.

// ErrTimeout is wrapped by errors (and context cancellation causes) that
// mean a command, an operation or a whole trial ran past its time limit
// or hung: they end a trial TIMED_OUT. services.ErrTimeout is this error.
var ErrTimeout = errors.New("timed out")

// Globals builds the globals a trial's environments get, in this order
// (later wins):
//
//  1. the experiment's globals (base),
//  2. the trial's stored metadata (repeat_i, ...), only for keys base
//     does not have; a multi-fidelity trial's fidelity value goes under
//     its parameter's name even over base (fidelity.go),
//  3. extra (a device slot's gpu_id/cpu_slot/device_slot, or the globals
//     the driver sent along with an engine job's request),
//  4. experiment_id, trial_id and trial_runner_id (trial_id and
//     trial_runner_id as int64, as mlos_bench's TrialRunner passes them).
//
// The maps given are not changed.
func Globals(base map[string]any, metadata map[string]string, extra map[string]any, experimentID string, trialID, runnerID int) map[string]any {
	g := make(map[string]any, len(base)+len(metadata)+len(extra)+3)
	for k, v := range base {
		g[k] = v
	}
	for k, v := range metadata {
		if _, ok := g[k]; !ok {
			g[k] = v
		}
	}
	fidelityGlobals(g, metadata) // fidelity.go: the value a multi-fidelity trial runs at
	for k, v := range extra {
		g[k] = v
	}
	g["experiment_id"] = experimentID
	g["trial_id"] = int64(trialID)
	g["trial_runner_id"] = int64(runnerID)
	return g
}

// ErrBadRunStatus is wrapped when a run ends with a status that is neither
// final nor one of the unfinished statuses a run may end with.
var ErrBadRunStatus = errors.New("not a status a run may end with")

// RunEnd tells what a status a run ended with means: final (SUCCEEDED,
// FAILED, TIMED_OUT, CANCELED: the outcome is stored and observed), or
// unfinished (READY, PENDING, RUNNING: as in mlos_bench, where a NetworkEnv
// or SaaSEnv alone ends READY, the trial keeps that status, without
// results, no optimizer sees it and a resume runs it again). Any other
// status (UNKNOWN, out of range) gives an error wrapping ErrBadRunStatus.
// Every runner kind accepts the same statuses: the scheduler for local
// runners, the engines' outcome files, bench serve's results.
func RunEnd(s Status) (final bool, err error) {
	switch {
	case s.IsCompleted():
		return true, nil
	case s == READY || s == PENDING || s == RUNNING:
		return false, nil
	}
	return false, fmt.Errorf("status %s: %w (want a final status, or READY, PENDING or RUNNING)", s, ErrBadRunStatus)
}

// Finalize is the check every final outcome passes before it is stored:
// a SUCCEEDED outcome whose results lack a target metric (or hold a
// non-numeric one) becomes FAILED, with the reason (and the run's notes,
// MissingMetricReason) and without results.
// Other outcomes, and outcomes of an experiment without targets, are
// returned as they are.
func (os Objectives) Finalize(out Outcome) Outcome {
	if out.Status != SUCCEEDED {
		return out
	}
	if _, err := os.Scores(out.Status, out.Results); err != nil {
		out.Status, out.FailureReason, out.Results = FAILED, MissingMetricReason(err, out.Notes), nil
	}
	return out
}

// StopCause tells how a trial whose context ended is to be recorded, from
// the context's cancellation cause:
//
//   - a cause wrapping ErrTimeout (trial_idle_timeout, a time limit):
//     TIMED_OUT, the cause as the reason;
//   - no cause of its own (plain cancel or deadline: bench itself is
//     stopping): interrupted, nothing is to be stored, and the trial runs
//     again (or is re-attached to) on resume; the status is CANCELED and
//     the reason "cancelled" for callers that must return an outcome;
//   - any other cause (bench stop, a lost claim): CANCELED, the cause as
//     the reason.
//
// It must only be called once ctx is done.
func StopCause(ctx context.Context) (st Status, reason string, interrupted bool) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrTimeout):
		return TIMED_OUT, cause.Error(), false
	case cause == nil || cause == ctx.Err() || cause == context.Canceled || cause == context.DeadlineExceeded:
		return CANCELED, "cancelled", true
	}
	return CANCELED, cause.Error(), false
}

// Budget is an experiment's trial budget, as far as the number of
// configurations to ask an optimizer for goes.
type Budget struct {
	// Repeats is trial_config_repeat_count (each configuration is run
	// that many times; below 1 counts as 1).
	Repeats int
	// MaxTrials caps the experiment's trials, retries left out (0: no cap).
	MaxTrials int
}

// Suggestions returns how many configurations to ask the optimizer for so
// that trials more trials can be queued (each configuration gives Repeats
// trials, rounded up), plus ahead configurations on top (queue_ahead, where
// it counts configurations), capped so that the trials of the
// configurations do not exceed MaxTrials given the have trials the
// experiment already has. It is never negative; 0 means: ask for none.
func (b Budget) Suggestions(trials, ahead, have int) int {
	r := max(b.Repeats, 1)
	k := 0
	if trials > 0 {
		k = (trials + r - 1) / r
	}
	k += max(ahead, 0)
	if b.MaxTrials > 0 {
		k = min(k, (b.MaxTrials-have+r-1)/r)
	}
	return max(k, 0)
}

// TakeOver reports whether a process named self may take over an
// unfinished trial owned by owner without waiting for its lease: the
// owner is another process of this host (owner names host:pid:random,
// as schedulers.NewOwner makes them) that no longer exists. Trials of
// other hosts are only taken over once their lease has expired (storage's
// claims do that).
func TakeOver(owner, self string, finished bool) bool {
	return !finished && owner != "" && owner != self && OwnerDead(owner)
}

// OwnerDead reports whether owner (host:pid:random) names a process of
// this host that no longer exists (a different host, this process, or a
// name of another shape: false).
func OwnerDead(owner string) bool {
	host, _ := os.Hostname()
	pid, ok := ownerPID(owner, host)
	if !ok || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownerPID reads the pid of an owner name of host ("h:o:s:t:pid:random"
// for a host with colons); ok is false for an owner of another host or of
// another shape.
func ownerPID(owner, host string) (int, bool) {
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return 0, false
	}
	if strings.Join(parts[:len(parts)-2], ":") != host {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

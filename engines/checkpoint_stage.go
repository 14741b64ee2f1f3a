package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/checkpoint"
	"github.com/benchtune/bench/services/local"
	"github.com/benchtune/bench/trial"
)

// Multi-fidelity promotion "continue" with a checkpoint store (the
// fidelity setting checkpoint_store, bench only): the trial's checkpoint
// directory is not a folder the driver keeps but a fresh local one, filled
// before the trial from the archive its predecessor left in the store and
// archived back into the store after it. This is the runners' checkpoint
// hook (schedulers.LocalRunner.Checkpoints), so it happens wherever a
// trial really runs: bench exec-trial on the far side of every engine
// (AWS Batch, Kubernetes, the SSH pool, Slurm, the local engine), network
// workers, bench worker and bench run's local runners.

// CheckpointUploadTimeout bounds the upload of a trial's checkpoint after
// the trial (which may have been stopped: the upload goes on without the
// trial's context).
const CheckpointUploadTimeout = 15 * time.Minute

// StageCheckpoint prepares a trial whose globals name a checkpoint store
// (trial.CheckpointStoreKey; otherwise it returns the globals unchanged
// and no finish). It makes a fresh local directory, unpacks into it the
// checkpoint of the trial this one continues (trial.ContinueFromKey; a
// missing archive is logged and the trial starts from an empty directory,
// as with promotion "rerun"), and returns the globals with
// trial.CheckpointDirKey set to it. finish, called once the trial is over
// whatever its status, archives the directory to the store under the
// trial's own id (when the trial left anything in it) and removes it. An
// archive that cannot be read or that is unsafe (a name or link leaving
// the directory) is an error: the trial does not run.
func StageCheckpoint(ctx context.Context, spec trial.Spec) (map[string]any, func(context.Context, *trial.Outcome), error) {
	store, _ := spec.Globals[trial.CheckpointStoreKey].(string)
	if store == "" {
		return spec.Globals, nil, nil
	}
	exp := spec.ExperimentID
	if exp == "" {
		exp, _ = spec.Globals["experiment_id"].(string)
	}
	own, err := checkpoint.ObjectURL(store, exp, spec.TrialID)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint store: %w", err)
	}
	dir, err := local.MkdirOwnedTemp("checkpoint") // removed by a later bench if this one is killed
	if err != nil {
		return nil, nil, fmt.Errorf("making the trial's checkpoint directory: %w", err)
	}
	if from := continueFrom(spec.Globals); from > 0 {
		u, err := checkpoint.ObjectURL(store, exp, from)
		if err == nil {
			err = fetchCheckpoint(ctx, u, dir)
		}
		switch {
		case errors.Is(err, ErrNotFound):
			slog.Warn("checkpoint: the trial this one continues left no checkpoint in the store; it starts from an empty checkpoint directory",
				"trial", spec.TrialID, "continues", from, "object", u)
		case err != nil:
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("the checkpoint of trial %d (%s): %w", from, u, err)
		default:
			slog.Info("checkpoint: unpacked the checkpoint of the trial this one continues", "trial", spec.TrialID, "continues", from, "object", u)
		}
	}
	g := maps.Clone(spec.Globals)
	g[trial.CheckpointDirKey] = dir
	finish := func(ctx context.Context, out *trial.Outcome) {
		defer os.RemoveAll(dir)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CheckpointUploadTimeout)
		defer cancel()
		n, err := putCheckpoint(uctx, dir, own)
		switch {
		case err != nil:
			slog.Warn("checkpoint: could not upload the trial's checkpoint; a promotion of it will start from an empty checkpoint directory",
				"trial", spec.TrialID, "status", out.Status, "object", own, "err", err)
		case n > 0:
			slog.Info("checkpoint: uploaded the trial's checkpoint", "trial", spec.TrialID, "status", out.Status, "object", own, "entries", n)
		}
	}
	return g, finish, nil
}

// continueFrom is the trial id in trial.ContinueFromKey (0: none).
func continueFrom(g map[string]any) int {
	v, ok := g[trial.ContinueFromKey]
	if !ok || v == nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(v)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// fetchCheckpoint downloads the archive at u into a temporary file and
// unpacks it into dir (checkpoint.Unpack: nothing lands outside dir).
func fetchCheckpoint(ctx context.Context, u, dir string) error {
	f, err := os.CreateTemp("", "bench-checkpoint-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := DownloadURL(ctx, u, f); err != nil {
		return err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	return checkpoint.Unpack(ctx, f, dir)
}

// putCheckpoint archives dir and uploads it to u; an empty dir uploads
// nothing (0 entries).
func putCheckpoint(ctx context.Context, dir, u string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return 0, err
	}
	f, err := os.CreateTemp("", "bench-checkpoint-*.tar.gz")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, skipped, err := checkpoint.Pack(ctx, dir, f)
	if err != nil {
		return 0, fmt.Errorf("packing %s: %w", dir, err)
	}
	if len(skipped) > 0 {
		slog.Warn("checkpoint: left out of the archive", "entries", strings.Join(skipped, "; "))
	}
	return n, UploadURL(ctx, u, f)
}

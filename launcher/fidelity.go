package launcher

import (
	"errors"
	"path/filepath"
	"strings"

	"fmt"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/awsbatch"
	"github.com/benchtune/bench/engines/kubernetes"
	"github.com/benchtune/bench/engines/sshpool"
	"github.com/benchtune/bench/optimizers"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// checkFidelity checks the scheduler's fidelity (bench only) against what
// the run's configs define, in provision (so bench validate and bench run
// say the same): a tunable must be numeric with a range that covers
// min..max; any other name must be a parameter that some config has or a
// global (the trial's value overrides it), else it would reach no
// environment.
func (r *Run) checkFidelity(cfg schedulers.Config) error {
	f := cfg.Fidelity
	if !f.On() || len(r.Runners) == 0 {
		return nil
	}
	l := r.Launch
	known := l.Loader.SeenKeys()
	for k := range l.Globals {
		if k != "fidelity" {
			known[k] = true
		}
	}
	err := schedulers.CheckFidelity(f, r.Runners[0].Env.Tunables(), known)
	if err != nil && f.Ref.Node() == nil {
		// Given as a global (a globals file or --fidelity).
		return locateGlobal(l, "fidelity", err)
	}
	return err
}

// checkFidelityOptimizer checks fidelity.promote_by and start "model"
// against the optimizer (in provision, so bench validate says it too):
// they need one that predicts at full fidelity
// (optimizers.FidelityPredictor); start "acquisition" one that chooses
// the fidelity (optimizers.FidelityChooser).
func (r *Run) checkFidelityOptimizer(cfg schedulers.Config) error {
	f := cfg.Fidelity
	key := ""
	switch {
	case !f.On():
		return nil
	case f.PromoteBy == schedulers.PromoteByModel:
		key = "promote_by"
	case f.Start == schedulers.StartModel:
		key = "start"
	case f.Start == schedulers.StartAcquisition:
		if schedulers.ChoosesFidelity(r.Optimizer) {
			return nil
		}
		err := f.Ref.Child("start").Errorf("%s", schedulers.AcquisitionSettingError(r.Optimizer.Name()))
		if f.Ref.Node() == nil {
			return locateGlobal(r.Launch, "fidelity", err)
		}
		return err
	default:
		return nil
	}
	if fp, ok := r.Optimizer.(optimizers.FidelityPredictor); ok && fp.PredictsFull() {
		return nil
	}
	err := f.Ref.Child(key).Errorf("%s", schedulers.ModelSettingError(key, r.Optimizer.Name()))
	if f.Ref.Node() == nil {
		// Given as a global (a globals file or --fidelity).
		return locateGlobal(r.Launch, "fidelity", err)
	}
	return err
}

// noBestProblem is the end-of-run problem of a run without a best trial;
// in a multi-fidelity run whose trials succeeded below full fidelity only,
// it says so (those results are estimates, never the answer).
func noBestProblem(trials []storage.Trial) string {
	low := 0
	full := ""
	for _, t := range trials {
		if v, m, ok := trial.FidelityOf(t.Metadata); ok && v < m && t.Status == trial.SUCCEEDED {
			low++
			full = t.Metadata[trial.FidelityMaxKey]
		}
	}
	if low > 0 {
		return fmt.Sprintf("no trial succeeded at full fidelity (%s), only %d at lower ones: give the search more configurations (max_suggestions) so that some are promoted to the last rung", full, low)
	}
	return "no trial succeeded with numeric values for the optimization targets"
}

// locateFidelityGlobal points a scheduler config error about a fidelity
// given in a globals file at that file's key.
func locateFidelityGlobal(l *configs.Launch, err error) error {
	var se *source.Error
	if err == nil || !errors.As(err, &se) || se.Path != "/fidelity" && !strings.HasPrefix(se.Path, "/fidelity/") {
		return err
	}
	return locateGlobal(l, "fidelity", err)
}

// checkFidelityEngine checks promotion "continue" against the engine that
// runs the trials (in newEngine, so bench validate says it too): a
// promoted trial resumes from a checkpoint directory the driver keeps at
// its own absolute path (checkpoint_dir), so the job must see that path.
// AWS Batch containers and Kubernetes pods share no file system with the
// driver (neither engine mounts volumes): refused, with what to use
// instead. SSH pool hosts see it only through a file system shared at the
// same path: a warning. Local and Slurm jobs (the Slurm engine requires a
// shared file system) see it.
//
// With a checkpoint_store the checkpoints travel through it (staged by
// bench exec-trial where the job runs): every engine is accepted.
func (r *Run) checkFidelityEngine(cfg schedulers.Config, spec engines.Spec) error {
	f := cfg.Fidelity
	if !f.On() || f.Promotion != schedulers.PromotionContinue {
		return nil
	}
	if f.CheckpointStore != "" {
		r.log.Info("fidelity: promotion \"continue\" stages each trial's checkpoint through the checkpoint store where the trial runs; the jobs need credentials for it",
			"checkpoint_store", f.CheckpointStore, "engine", spec.Class)
		return nil
	}
	root, _ := filepath.Abs(filepath.Join(f.CheckpointDir, r.ExperimentID))
	switch spec.Class {
	case awsbatch.ClassShort, awsbatch.ClassFull, kubernetes.ClassShort, kubernetes.ClassFull:
		ref := f.Ref.Child("promotion")
		err := fmt.Errorf("fidelity.promotion \"continue\" cannot work with the %s: a promoted trial resumes from the checkpoint directory the driver keeps (%s), and this engine's jobs share no file system with the driver; give fidelity.checkpoint_store (\"s3://bucket/prefix\": each trial's checkpoint goes through it, wherever the job runs) or use \"promotion\": \"rerun\"", spec.Class, root)
		if ref.Node() == nil {
			return locateGlobal(r.Launch, "fidelity", err)
		}
		e := ref.Errorf("")
		e.Err = err
		return e
	case sshpool.Class, sshpool.ClassFull:
		r.log.Warn("fidelity: promotion \"continue\" on the SSH pool: every host must see the driver's checkpoint directory at the same path (a shared file system); on a host that does not, a promoted trial finds no checkpoint and starts from scratch (fidelity.checkpoint_store stages the checkpoints through S3 instead)",
			"checkpoint_dir", root)
	}
	return nil
}

package schedulers

import (
	"context"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
)

// decodeRefineMode reads confirm_refine_mode (bench only): "design"
// (default: confirm_refine's one-stage local design, refine.go) or
// "staged" (the staged refinement, refineStaged below), which needs
// confirm_refine > 0 (its trials in all) and noise_aware.
func decodeRefineMode(cfg map[string]any, n NoiseConfig, bad func(key, format string, args ...any)) string {
	s := decodeModeKey(cfg, "confirm_refine_mode", optimizers.RefineModeDesign, optimizers.RefineModeStaged, bad) // choice.go
	if s == optimizers.RefineModeStaged {
		if n.ConfirmRefine <= 0 {
			bad("confirm_refine_mode", "confirm_refine_mode %q needs confirm_refine > 0: the number of trials of its local design (e.g. 30 for 100 trials)", s)
		}
		if !n.NoiseAware {
			bad("confirm_refine_mode", "confirm_refine_mode %q needs noise_aware: true (its rounds follow the model's posterior mean)", s)
		}
	}
	return s
}

// refineStaged is refinePhase for confirm_refine_mode "staged": when the
// optimizer's search has settled (asked before the first refinement
// trial; a rerun that finds refinement trials goes on with them), the
// confirm_refine trials run in rounds (optimizers.StagedSplit), each
// round's design asked for once the previous round has been observed;
// then the minimiser of the posterior mean in the last round's box is the
// first candidate of the confirmation. Not settled: no refinement, the
// confirmation runs as without it (nil). A rerun after an interruption
// counts the refinement trials already begun against the rounds in order
// and restarts the rest from the model's best.
func (d *dispatch) refineStaged(ctx context.Context, all []storage.Trial) (map[string]any, error) {
	s := d.s
	n := s.cfg.Noise
	r, ok := s.opt.(optimizers.StagedRefiner)
	if !ok || !n.NoiseAware {
		s.log.Warn("confirm_refine needs noise_aware and the Bayesian optimizer (SMAC); confirming without the local refinement")
		return nil, nil
	}
	begun := 0
	for _, t := range all {
		if t.Metadata[analysis.MetaPhase] == PhaseRefine {
			begun++
		}
	}
	if begun == 0 && !r.RefineSettled() {
		s.log.Info("staged refinement skipped: the model still expects more than the noise from its search; confirming its best")
		return nil, nil
	}
	for i, size := range optimizers.StagedSplit(n.ConfirmRefine) {
		if begun >= size {
			begun -= size
			continue
		}
		left := size - begun
		begun = 0
		design, err := r.RefineStageDesign(left)
		if err != nil {
			s.log.Warn("staged refinement: no design", "round", i+1, "err", err)
			return nil, nil
		}
		if err := d.runRefineDesign(ctx, design, "staged refinement: a local design around the model's estimate of the bottom", "round", i+1); err != nil { // refine.go
			return nil, err
		}
	}
	best, err := r.RefineStagedBest()
	if err != nil {
		s.log.Warn("staged refinement: no minimiser", "err", err)
		return nil, nil
	}
	return best, nil
}

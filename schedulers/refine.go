package schedulers

import (
	"context"
	"maps"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
)

// PhaseRefine marks a trial of the local refinement (confirm_refine):
// a configuration of the local design around the model's best, run after
// the search and before the confirmation, observed like any other.
const PhaseRefine = "refine"

// refinePhase runs, when confirm_refine is set in noise-aware mode with
// an optimizer that can refine (optimizers.LocalRefiner), a local design
// of confirm_refine configurations around the model's best (those begun
// by an earlier run count), then returns the configuration of that
// neighbourhood with the lowest posterior mean, the first candidate of
// the confirmation (nil: no refinement).
func (d *dispatch) refinePhase(ctx context.Context, all []storage.Trial) (map[string]any, error) {
	s := d.s
	n := s.cfg.Noise
	if n.ConfirmRefine <= 0 {
		return nil, nil
	}
	if n.ConfirmRefineMode == optimizers.RefineModeStaged {
		return d.refineStaged(ctx, all) // refine_staged.go
	}
	r, ok := s.opt.(optimizers.LocalRefiner)
	if !ok || !n.NoiseAware {
		s.log.Warn("confirm_refine needs noise_aware and the Bayesian optimizer (SMAC); confirming without the local refinement")
		return nil, nil
	}
	left := n.ConfirmRefine
	for _, t := range all {
		if t.Metadata[analysis.MetaPhase] == PhaseRefine {
			left--
		}
	}
	if left > 0 {
		design, err := r.RefineDesign(left)
		if err != nil {
			s.log.Warn("local refinement: no design", "err", err)
			return nil, nil
		}
		if err := d.runRefineDesign(ctx, design, "local refinement: a space-filling design around the model's best"); err != nil {
			return nil, err
		}
	}
	best, err := r.RefineBest()
	if err != nil {
		s.log.Warn("local refinement: no minimiser", "err", err)
		return nil, nil
	}
	return best, nil
}

// runRefineDesign queues design's configurations as refinement trials
// (those the tunables refuse are left out), logs msg with args and the
// number queued, and runs them to the end (no other suggestion meanwhile).
func (d *dispatch) runRefineDesign(ctx context.Context, design []map[string]any, msg string, args ...any) error {
	s := d.s
	queued := 0
	for _, v := range design {
		tun := s.o.Tunables.Copy()
		if err := tun.Assign(v); err != nil {
			continue
		}
		meta := d.metadata(tun)
		meta[analysis.MetaPhase] = PhaseRefine
		spec := storage.TrialSpec{ConfigHash: tun.Hash(), Params: tun.StringValues(), Metadata: maps.Clone(meta)}
		d.queue = append(d.queue, item{spec: &spec})
		queued++
	}
	s.log.Info(msg, append(args, "trials", queued)...)
	s.growPlan(queued)
	d.noMore = true
	d.stopApplied = true
	return d.loop(ctx)
}

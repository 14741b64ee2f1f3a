package optimizers

import (
	"github.com/benchtune/bench/optimizers/bayes"
)

// Values of the scheduler's confirm_refine_mode.
const (
	// RefineModeDesign is the one-stage local design (refine.go, the
	// default).
	RefineModeDesign = "design"
	// RefineModeStaged is the staged refinement (bench only): only when
	// the search has settled, the design in bayes.StagedStages rounds,
	// each around the posterior mean's minimiser in the previous round's
	// box (optimizers/bayes/noise_h.go).
	RefineModeStaged = "staged"
)

// StagedRefiner is an optimizer that can refine in stages (the
// noise-aware Bayesian optimizer; the scheduler's confirm_refine_mode
// "staged"): RefineSettled says whether its search has settled (the
// expected improvement at its next point is below 0.7 noise standard
// deviations, on a model whose noise is not most of the variation);
// RefineStageDesign returns the next round's n configurations (the first
// round around the model's best, each later one around the minimiser of
// the posterior mean in the previous round's box, which must have been
// observed); RefineStagedBest returns the minimiser of the posterior mean
// in the last round's box.
type StagedRefiner interface {
	RefineSettled() bool
	RefineStageDesign(n int) ([]map[string]any, error)
	RefineStagedBest() (map[string]any, error)
}

// StagedSplit returns the sizes of the staged refinement's rounds for n
// trials in all.
func StagedSplit(n int) []int { return bayes.StagedSplit(n, bayes.StagedStages) }

type stagedEngine interface {
	SearchSettled(factor float64) bool
	NewStaged() (*bayes.Staged, error)
}

func (m *MlosCore) stagedEngine() (stagedEngine, error) {
	e, ok := m.eng.(stagedEngine)
	if !ok || m.fid != nil {
		return nil, errNoRefine
	}
	return e, nil
}

// stagedRun returns the staged refinement under way, started around the
// model's best when none is (the first round, or after a resume).
func (m *MlosCore) stagedRun() (*bayes.Staged, error) {
	e, err := m.stagedEngine()
	if err != nil {
		return nil, err
	}
	if m.staged == nil {
		if m.staged, err = e.NewStaged(); err != nil {
			return nil, err
		}
	}
	return m.staged, nil
}

// RefineSettled reports whether the search has settled (bayes'
// SearchSettled with bayes.StagedSettledFactor).
func (m *MlosCore) RefineSettled() bool {
	e, err := m.stagedEngine()
	return err == nil && e.SearchSettled(bayes.StagedSettledFactor)
}

// RefineStageDesign returns the next round's n configurations of the
// staged refinement (the first call starts it around the model's best).
func (m *MlosCore) RefineStageDesign(n int) ([]map[string]any, error) {
	st, err := m.stagedRun()
	if err != nil {
		return nil, err
	}
	pts, err := st.Design(n)
	if err != nil {
		return nil, err
	}
	return m.decodeAll(pts), nil // refine.go
}

// RefineStagedBest returns the minimiser of the posterior mean in the
// last round's box (in the first box around the model's best when no
// round ran in this process, e.g. after a resume).
func (m *MlosCore) RefineStagedBest() (map[string]any, error) {
	st, err := m.stagedRun()
	if err != nil {
		return nil, err
	}
	p, err := st.Best()
	if err != nil {
		return nil, err
	}
	return m.space.Decode(p)
}

var _ StagedRefiner = (*MlosCore)(nil)

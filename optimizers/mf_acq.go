package optimizers

import (
	"fmt"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// FidelityChooser is implemented by FidelityPredictor optimizers that can
// also choose the fidelity a new configuration starts at, by a
// cost-aware multi-fidelity acquisition (bench only; the scheduler's
// fidelity start "acquisition"): the cheapest fidelity at which the model
// is still uncertain about the configuration, against a threshold that
// grows with the fidelity's cost, else full fidelity (BOCA's rule:
// optimizers/bayes ChooseFidelity). It extends FidelityPredictor without
// changing that contract.
type FidelityChooser interface {
	FidelityPredictor
	// ChoosesFidelity reports whether ChooseStart can answer once
	// SetFidelity was called.
	ChoosesFidelity() bool
	// ChooseStart returns the index in fids (fidelity values, increasing,
	// the last one the full fidelity Max) at which configuration tun
	// should run (the fidelity's own value in tun is ignored); a run's
	// cost is taken to be proportional to its fidelity. kappa scales the
	// thresholds (0: the default, bayes.DefaultFidelityKappa). ok is
	// false, with nothing chosen, while the model does not exist yet (too
	// few results) or before SetFidelity.
	ChooseStart(tun *tunables.Groups, fids []float64, kappa float64) (level int, ok bool, err error)
}

var _ FidelityChooser = (*MlosCore)(nil)

// ChoosesFidelity: as PredictsFull (the GP with the fidelity input).
func (m *MlosCore) ChoosesFidelity() bool { return m.kind == "SMAC" }

// ChooseStart asks the GP with the fidelity input (optimizers/bayes
// ChooseFidelity).
func (m *MlosCore) ChooseStart(tun *tunables.Groups, fids []float64, kappa float64) (int, bool, error) {
	fm := m.fid
	if fm == nil || fm.gp == nil {
		return 0, false, nil
	}
	if len(fids) == 0 || fids[len(fids)-1] != fm.f.Max {
		return 0, false, fmt.Errorf("%s: ChooseStart: the fidelities %v must end at full fidelity %v", m.name, fids, fm.f.Max)
	}
	levels := make([]bayes.FidelityLevel, len(fids))
	for i, v := range fids {
		c, err := m.coordOf(fm, v)
		if err != nil {
			return 0, false, err
		}
		levels[i] = bayes.FidelityLevel{Coord: c, Cost: v}
	}
	p, err := m.space.Encode(tun.Values())
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", m.name, err)
	}
	if fm.ti >= 0 {
		p[fm.ti] = fm.full
	}
	x := (&fidelityEngine{ti: fm.ti}).ext(p, fm.full)
	ch, ok, err := fm.gp.ChooseFidelity(x, levels, kappa)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", m.name, err)
	}
	if !ok {
		return 0, false, nil
	}
	return ch.Level, true, nil
}

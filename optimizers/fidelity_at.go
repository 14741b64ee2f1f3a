package optimizers

import (
	"fmt"

	"github.com/benchtune/bench/tunables"
)

// FidelityAtPredictor is implemented by FidelityPredictor optimizers
// that also predict a configuration's value at any fidelity (bench only):
// what the scheduler's dynamic planner (fidelity planner "dyhpo") needs to
// score continuing a configuration by its expected improvement at its
// next fidelity rather than at full fidelity.
type FidelityAtPredictor interface {
	FidelityPredictor
	// PredictAt returns the prediction of tuns[i] at fidelity
	// fidelities[i] (a value of the fidelity's range; the configuration's
	// own value of a fidelity tunable is ignored), with its SD, and the
	// incumbent at that fidelity on the same scale: the best predicted
	// value there over the configurations observed so far (at any
	// fidelity). ok is false, with nothing
	// predicted, while the model does not exist yet or before SetFidelity.
	PredictAt(tuns []*tunables.Groups, fidelities []float64) (pred []FullPrediction, incumbent []float64, ok bool, err error)
}

var _ FidelityAtPredictor = (*MlosCore)(nil)

// PredictAt asks the GP with the fidelity input (optimizers/bayes
// PredictAt) for each configuration at its fidelity.
func (m *MlosCore) PredictAt(tuns []*tunables.Groups, fidelities []float64) ([]FullPrediction, []float64, bool, error) {
	fm := m.fid
	if fm == nil || fm.gp == nil {
		return nil, nil, false, nil
	}
	if len(fidelities) != len(tuns) {
		return nil, nil, false, fmt.Errorf("%s: %d configurations but %d fidelities", m.name, len(tuns), len(fidelities))
	}
	eng := &fidelityEngine{ti: fm.ti}
	xs := make([]tunables.Point, len(tuns))
	for i, t := range tuns {
		p, err := m.space.Encode(t.Values())
		if err != nil {
			return nil, nil, false, fmt.Errorf("%s: %w", m.name, err)
		}
		c, err := m.coordOf(fm, min(max(fidelities[i], fm.f.Min), fm.f.Max))
		if err != nil {
			return nil, nil, false, err
		}
		if fidelities[i] >= fm.f.Max {
			c = fm.full
		}
		xs[i] = eng.ext(p, c)
	}
	pred, inc, ok, err := fm.gp.PredictAt(xs)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	out := make([]FullPrediction, len(pred))
	for i, p := range pred {
		out[i] = FullPrediction{Mean: p.Mean, SD: p.SD}
	}
	return out, inc, true, nil
}

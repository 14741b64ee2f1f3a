package optimizers

import (
	"fmt"
	"math"

	"github.com/benchtune/bench/tunables"
)

// FullPrediction is a model's prediction of a configuration's value at
// full fidelity (FidelityPredictor): mean and standard deviation on the
// model's scale, a monotone increasing transform of the first target's
// score (lower is better), comparable with the other predictions and the
// incumbent of the same call, not with raw metric values.
type FullPrediction struct {
	Mean, SD float64
}

// FidelityPredictor is implemented by FidelityAware optimizers whose model
// learns from every fidelity and predicts a configuration's value at full
// fidelity (bench only). A multi-fidelity scheduler uses it to decide with
// the model rather than with the observed values alone: which
// configurations of a rung to promote (fidelity promote_by "model"), or
// whether a new configuration is promising enough to start at full
// fidelity (fidelity start "model"). It extends FidelityAware without
// changing that contract.
type FidelityPredictor interface {
	FidelityAware
	// PredictsFull reports whether PredictFull can answer once
	// SetFidelity was called (the optimizer has such a model).
	PredictsFull() bool
	// PredictFull returns the prediction at full fidelity of each
	// configuration in tuns (the fidelity's own value, when it is a
	// tunable, is ignored), SD only when withSD is set (else NaN; it
	// costs more), and the incumbent on the same scale: the best
	// predicted value at full fidelity over the configurations observed
	// so far. ok is false, with nothing predicted, while the model does
	// not exist yet (too few results) or before SetFidelity.
	PredictFull(tuns []*tunables.Groups, withSD bool) (pred []FullPrediction, incumbent float64, ok bool, err error)
}

var _ FidelityPredictor = (*MlosCore)(nil)

// PredictsFull: MlosCore with optimizer_type SMAC (the GP with the
// fidelity as an input) predicts; RANDOM and FLAML have no model.
func (m *MlosCore) PredictsFull() bool { return m.kind == "SMAC" }

// PredictFull asks the GP with the fidelity input (optimizers/bayes
// PredictFull) for each configuration at full fidelity.
func (m *MlosCore) PredictFull(tuns []*tunables.Groups, withSD bool) ([]FullPrediction, float64, bool, error) {
	fm := m.fid
	if fm == nil || fm.gp == nil {
		return nil, 0, false, nil
	}
	eng := &fidelityEngine{ti: fm.ti}
	xs := make([]tunables.Point, len(tuns))
	for i, t := range tuns {
		p, err := m.space.Encode(t.Values())
		if err != nil {
			return nil, 0, false, fmt.Errorf("%s: %w", m.name, err)
		}
		if fm.ti >= 0 {
			p[fm.ti] = fm.full
		}
		xs[i] = eng.ext(p, fm.full)
	}
	pred, inc, ok, err := fm.gp.PredictFull(xs, withSD)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	out := make([]FullPrediction, len(pred))
	for i, p := range pred {
		out[i] = FullPrediction{Mean: p.Mean, SD: p.SD}
		if !withSD {
			out[i].SD = math.NaN()
		}
	}
	return out, inc, true, nil
}

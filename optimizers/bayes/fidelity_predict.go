package bayes

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/tunables"
)

// Predictions at full fidelity (multi-fidelity mode, SetFidelity), for a
// scheduler that decides with the model rather than with the observed
// values alone: which configurations of a rung to promote (by their
// predicted full-fidelity value, which the model infers from every
// fidelity it has seen), or whether a new configuration is promising
// enough to run at full fidelity at once.

// Prediction is the GP's posterior of a configuration's value at full
// fidelity, on the model's scale: the objective after the monotone output
// transform (transform.go: standardized, possibly power-warped, lower is
// better), so predictions compare with each other and with the incumbent
// returned with them, not with raw objective values.
type Prediction struct {
	Mean, SD float64
}

// PredictFull returns the posterior at full fidelity of each
// configuration in xs (points of the space; their fidelity coordinate is
// ignored and set to full fidelity), with SD only when withSD is set (the
// variance costs O(n²) per point, the mean O(n)), and the incumbent on the
// same scale: the lowest posterior mean at full fidelity over the observed
// configurations (log EI's incumbent). ok is false, with nothing
// predicted, before the model exists (fewer than 2 successful
// observations) or without a fidelity. The model is brought up to date
// as Suggest would (a hyperparameter refit when one is due).
func (o *Optimizer) PredictFull(xs []tunables.Point, withSD bool) (pred []Prediction, incumbent float64, ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil {
		return nil, 0, false, nil
	}
	for i, x := range xs {
		if err := o.sp.Check(x); err != nil {
			return nil, 0, false, fmt.Errorf("point %d: %w", i, err)
		}
	}
	if ok, err := o.fidelityModel(); !ok || err != nil { // fidelity_at.go
		return nil, 0, false, err
	}
	g := o.g
	pred = make([]Prediction, len(xs))
	for i, x := range xs {
		f := o.encode(o.sp.Snap(o.pin(slices.Clone(x))))
		if withSD {
			mu, v := g.predict(f)
			pred[i] = Prediction{Mean: mu, SD: math.Sqrt(v)}
		} else {
			pred[i] = Prediction{Mean: g.mean(f), SD: math.NaN()}
		}
	}
	if o.fid.incG != g || o.fid.incN != g.n {
		// O(n²) over the training points: once per model state.
		o.fid.inc, o.fid.incG, o.fid.incN = o.incumbentAt(g), g, g.n
	}
	return pred, o.fid.inc, true, nil
}

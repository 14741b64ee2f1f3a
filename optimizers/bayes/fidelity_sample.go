package bayes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/benchtune/bench/tunables"
)

// SampleFull returns one joint sample of the GP's posterior at full
// fidelity (multi-fidelity mode, SetFidelity) at the configurations xs:
// Thompson sampling's draw (thompson.go's pathwise sample, random Fourier
// features moved to the posterior by the data), on PredictFull's scale
// (after the output transform and the removal of the fidelity's common
// offset, lower is better), so that the configuration with the lowest
// value is chosen with about the probability that it is the best of xs.
// The draw comes from rng (the caller's, so that its runs are
// reproducible). ok is false, with nothing drawn, where PredictFull's is,
// and where the sample is not available: a categorical dimension, the
// learning-curve kernel (SetFidelityKernel "decay") or the additive
// kernel.
func (o *Optimizer) SampleFull(xs []tunables.Point, rng *rand.Rand) (sample []float64, ok bool, err error) {
	if rng == nil {
		return nil, false, errors.New("SampleFull: no random generator")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil || !o.numericOnly() {
		return nil, false, nil
	}
	for i, x := range xs {
		if err := o.sp.Check(x); err != nil {
			return nil, false, fmt.Errorf("point %d: %w", i, err)
		}
	}
	if ok, err := o.fidelityModel(); !ok || err != nil { // fidelity_at.go
		return nil, false, err
	}
	g := o.g
	if g.ft != nil || g.rho > 0 {
		return nil, false, nil
	}
	fs := make([][]float64, len(xs))
	for i, x := range xs {
		fs[i] = o.encode(o.sp.Snap(o.pin(slices.Clone(x))))
	}
	return g.thompsonSample(fs, rng), true, nil
}

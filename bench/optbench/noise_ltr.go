package main

import "github.com/benchtune/bench/optimizers/bayes"

// -noise-search local-tr: the local search with trust.go's TuRBO regions
// from noiseLocalTRDims dimensions up (bayes.Optimizer.SetNoiseLocalTRDims,
// an experiment that the scheduler's noise_search does not offer; see
// docs/optimizers-algorithms.md, "TuRBO regions from 10 dimensions").
// Below noiseLocalTRDims dimensions it is the same search as local.
const (
	noiseSearchLocalTR = "local-tr"
	noiseLocalTRDims   = 10
)

// noiseLocalOn reports whether the noise-aware methods run the local
// search (SetNoiseLocal).
func noiseLocalOn() bool {
	return noiseSearch == "local" || noiseSearch == noiseSearchLocalTR
}

// noiseLocalSet turns the noise-aware optimizer's local search on as
// -noise-search says (after SetNoise).
func noiseLocalSet(o *bayes.Optimizer) {
	o.SetNoiseLocal(noiseLocalOn())
	if noiseSearch == noiseSearchLocalTR {
		o.SetNoiseLocalTRDims(noiseLocalTRDims)
	}
}

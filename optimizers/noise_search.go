package optimizers

import "github.com/benchtune/bench/optimizers/bayes"

// Values of NoiseSettings.Search (the scheduler's noise_search).
const (
	NoiseSearchGlobal = "global"
	NoiseSearchLocal  = "local"
)

// noiseLocalEngine is an engine with the noise-aware local search
// (bayes.Optimizer.SetNoiseLocal).
type noiseLocalEngine interface {
	SetNoiseLocal(on bool)
}

// setNoiseSearch hands the noise-aware search to an engine that has a
// choice of it (the local search acts only in noise-aware mode).
func setNoiseSearch(e any, ns NoiseSettings) {
	if l, ok := e.(noiseLocalEngine); ok {
		l.SetNoiseLocal(ns.Aware && ns.Search == NoiseSearchLocal)
	}
}

// The Bayesian optimizer (SMAC) has the local search.
var _ noiseLocalEngine = (*bayes.Optimizer)(nil)

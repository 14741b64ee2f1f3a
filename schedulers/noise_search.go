package schedulers

import (
	"github.com/benchtune/bench/optimizers"
)

// decodeNoiseSearch reads noise_search (bench only): "global" (default,
// the noise-aware GP searches the whole space) or "local" (after a global
// phase, a trust region around the posterior-mean incumbent,
// optimizers/bayes/noiselocal.go), which needs noise_aware.
func decodeNoiseSearch(cfg map[string]any, aware bool, bad func(key, format string, args ...any)) string {
	s := decodeModeKey(cfg, "noise_search", optimizers.NoiseSearchGlobal, optimizers.NoiseSearchLocal, bad) // choice.go
	if s == optimizers.NoiseSearchLocal && !aware {
		bad("noise_search", "noise_search %q needs noise_aware: true (the local search centres on the model's posterior-mean best)", s)
	}
	return s
}

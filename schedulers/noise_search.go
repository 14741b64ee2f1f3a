package schedulers

import (
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/optimizers"
)

// decodeNoiseSearch reads noise_search (bench only): "global" (default,
// the noise-aware GP searches the whole space) or "local" (after a global
// phase, a trust region around the posterior-mean incumbent,
// optimizers/bayes/noiselocal.go), which needs noise_aware.
func decodeNoiseSearch(cfg map[string]any, aware bool, bad func(key, format string, args ...any)) string {
	v, ok := cfg["noise_search"].(string)
	if cfg["noise_search"] == nil {
		v, ok = "", true
	}
	switch s := strings.ToLower(strings.TrimSpace(v)); {
	case !ok:
		bad("noise_search", "noise_search must be %q or %q, got %v", optimizers.NoiseSearchGlobal, optimizers.NoiseSearchLocal, configs.PyStr(cfg["noise_search"]))
	case s == "" || s == optimizers.NoiseSearchGlobal:
		return optimizers.NoiseSearchGlobal
	case s == optimizers.NoiseSearchLocal:
		if !aware {
			bad("noise_search", "noise_search %q needs noise_aware: true (the local search centres on the model's posterior-mean best)", s)
		}
		return s
	default:
		bad("noise_search", "noise_search must be %q (default) or %q, got %v", optimizers.NoiseSearchGlobal, optimizers.NoiseSearchLocal, configs.PyStr(cfg["noise_search"]))
	}
	return optimizers.NoiseSearchGlobal
}

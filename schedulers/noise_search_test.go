package schedulers

import (
	"testing"

	"github.com/benchtune/bench/optimizers"
)

// noise_search: global by default, local with noise_aware, and a clear
// error for anything else or for local without noise_aware.
func TestDecodeNoiseSearch(t *testing.T) {
	checkModeKey(t, "noise_search", func(c Config) string { return c.Noise.NoiseSearch }, []modeCase{
		{nil, optimizers.NoiseSearchGlobal},
		{map[string]any{"noise_aware": true}, optimizers.NoiseSearchGlobal},
		{map[string]any{"noise_aware": true, "noise_search": "local"}, optimizers.NoiseSearchLocal},
		{map[string]any{"noise_aware": "true", "noise_search": " Local "}, optimizers.NoiseSearchLocal},
		{map[string]any{"noise_search": "global"}, optimizers.NoiseSearchGlobal},
	}, []modeCase{
		{map[string]any{"noise_aware": true, "noise_search": "trust_region"}, `noise_search must be "global" (default) or "local", got trust_region`},
		{map[string]any{"noise_aware": true, "noise_search": int64(1)}, `noise_search must be "global" (default) or "local", got 1`},
		{map[string]any{"noise_search": "local"}, `noise_search "local" needs noise_aware: true`},
	}) // choice_test.go
}

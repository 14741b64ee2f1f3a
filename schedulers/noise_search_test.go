package schedulers

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
)

// noise_search: global by default, local with noise_aware, and a clear
// error for anything else or for local without noise_aware.
func TestDecodeNoiseSearch(t *testing.T) {
	for _, tc := range []struct {
		globals map[string]any
		want    string
	}{
		{nil, optimizers.NoiseSearchGlobal},
		{map[string]any{"noise_aware": true}, optimizers.NoiseSearchGlobal},
		{map[string]any{"noise_aware": true, "noise_search": "local"}, optimizers.NoiseSearchLocal},
		{map[string]any{"noise_aware": "true", "noise_search": " Local "}, optimizers.NoiseSearchLocal},
		{map[string]any{"noise_search": "global"}, optimizers.NoiseSearchGlobal},
	} {
		c, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true)
		if err != nil || c.Noise.NoiseSearch != tc.want {
			t.Errorf("%v: noise_search %q, error %v; want %q", tc.globals, c.Noise.NoiseSearch, err, tc.want)
		}
	}
	for _, tc := range []struct {
		globals map[string]any
		want    string
	}{
		{map[string]any{"noise_aware": true, "noise_search": "trust_region"}, `noise_search must be "global" (default) or "local", got trust_region`},
		{map[string]any{"noise_aware": true, "noise_search": int64(1)}, `noise_search must be "global" (default) or "local", got 1`},
		{map[string]any{"noise_search": "local"}, `noise_search "local" needs noise_aware: true`},
	} {
		if _, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.globals, err, tc.want)
		}
	}
}

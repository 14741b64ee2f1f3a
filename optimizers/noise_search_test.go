package optimizers

import "testing"

type localRecorder struct{ calls []bool }

func (r *localRecorder) SetNoiseLocal(on bool) { r.calls = append(r.calls, on) }

// noise_search "local" turns the engine's local search on only in
// noise-aware mode.
func TestSetNoiseSearch(t *testing.T) {
	for _, tc := range []struct {
		ns   NoiseSettings
		want bool
	}{
		{NoiseSettings{}, false},
		{NoiseSettings{Aware: true}, false},
		{NoiseSettings{Aware: true, Search: NoiseSearchGlobal}, false},
		{NoiseSettings{Search: NoiseSearchLocal}, false},
		{NoiseSettings{Aware: true, Search: NoiseSearchLocal}, true},
	} {
		r := &localRecorder{}
		setNoiseSearch(r, tc.ns)
		if len(r.calls) != 1 || r.calls[0] != tc.want {
			t.Errorf("%+v: SetNoiseLocal calls %v, want [%v]", tc.ns, r.calls, tc.want)
		}
	}
	setNoiseSearch(struct{}{}, NoiseSettings{Aware: true, Search: NoiseSearchLocal}) // no local search: nothing to do
}

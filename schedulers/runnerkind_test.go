package schedulers

import (
	"testing"

	"github.com/benchtune/bench/configs/source"
)

// TestRunnerKind: the one choice of what runs the trials, from the
// config keys that decide it.
func TestRunnerKind(t *testing.T) {
	tests := []struct {
		name    string
		globals map[string]any
		want    string
	}{
		{"default", nil, RunnerLocal},
		{"runner local", map[string]any{"runner": "local"}, RunnerLocal},
		{"empty engine", map[string]any{"engine": "  "}, RunnerLocal},
		{"engine file", map[string]any{"engine": "engines/slurm.jsonc"}, RunnerEngine},
		{"engine object", map[string]any{"engine": map[string]any{"class": "bench.engines.Local"}}, RunnerEngine},
		{"passive", map[string]any{"runner": "Passive"}, RunnerPassive},
		{"driver only still names its kind", map[string]any{"local_trials": false}, RunnerLocal},
	}
	for _, tc := range tests {
		c, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.RunnerKind(); got != tc.want {
			t.Errorf("%s: RunnerKind() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

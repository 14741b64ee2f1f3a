package optimizers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
)

// TestMlosCoreFirstSuggestionSpecials: as mlos_bench's MlosCoreOptimizer
// (its ConfigSpace conversion defaults the special/range switch to
// "special"), the first suggestion of start_with_defaults puts every
// tunable with special values at its first special value, or at its
// declared default when that is special; bench_declared_defaults keeps the
// declared defaults.
func TestMlosCoreFirstSuggestionSpecials(t *testing.T) {
	const specials = `{"g": {"cost": 1, "params": {
		"level": {"type": "int", "range": [1, 9], "default": 6, "special": [0, -1]},
		"buf":   {"type": "int", "range": [1, 100], "default": -1, "special": [0, -1]},
		"ratio": {"type": "float", "range": [0.1, 0.9], "default": 0.5, "special": [-1.5]},
		"x":     {"type": "int", "range": [0, 10], "default": 5},
		"mode":  {"type": "categorical", "values": ["a", "b"], "default": "b"}}}}`
	for _, tc := range []struct {
		cfg  string
		want map[string]any
	}{
		{`{"optimizer_type": "RANDOM"}`, map[string]any{"level": int64(0), "buf": int64(-1), "ratio": -1.5, "x": int64(5), "mode": "b"}},
		{`{"optimizer_type": "FLAML"}`, map[string]any{"level": int64(0), "buf": int64(-1), "ratio": -1.5, "x": int64(5), "mode": "b"}},
		{`{"optimizer_type": "SMAC"}`, map[string]any{"level": int64(0), "buf": int64(-1), "ratio": -1.5, "x": int64(5), "mode": "b"}},
		{`{"optimizer_type": "SMAC", "bench_declared_defaults": true}`, map[string]any{"level": int64(6), "buf": int64(-1), "ratio": 0.5, "x": int64(5), "mode": "b"}},
	} {
		t.Run(tc.cfg, func(t *testing.T) {
			doc, err := source.Parse("opt.jsonc", []byte(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": `+tc.cfg+`}`))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := doc.Root.Get("config").Value().(map[string]any)
			o, err := New(Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer", Config: m, Ref: doc.At(), Tunables: groups(t, specials)})
			if err != nil {
				t.Fatal(err)
			}
			tun, err := SuggestOne(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tun.Values()); diff != "" {
				t.Errorf("first suggestion (-want +got):\n%s", diff)
			}
		})
	}
}

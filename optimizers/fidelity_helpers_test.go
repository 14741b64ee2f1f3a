package optimizers

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// fidAt returns a maker of configurations of o's tunables (newFidOpt's
// a, b, c and, when given, duration).
func fidAt(t *testing.T, o *MlosCore) func(a, b, c float64, duration ...int64) *tunables.Groups {
	return func(a, b, c float64, duration ...int64) *tunables.Groups {
		t.Helper()
		v := map[string]any{"a": a, "b": b, "c": c}
		for _, d := range duration {
			v["duration"] = d
		}
		tun := o.tunables.Copy()
		if err := tun.Assign(v); err != nil {
			t.Fatal(err)
		}
		return tun
	}
}

// observeDurationRounds runs rounds of 4 suggestions of o (fidelity
// duration 5..60), each observed at duration 5 except the first of every
// every-th round, at 60, with curveScore's value at the matching step of
// 1..27.
func observeDurationRounds(t *testing.T, o *MlosCore, rng *rand.Rand, rounds, every int) {
	t.Helper()
	for round := range rounds {
		sugs, err := o.Suggest(context.Background(), 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sugs {
			d := 5.0
			if i == 0 && round%every == every-1 {
				d = 60
			}
			tun := s.Tunables.Copy()
			if err := tun.Assign(map[string]any{"duration": int64(d)}); err != nil {
				t.Fatal(err)
			}
			y := curveScore(tun, 1+26*(d-5)/55, rng)
			if _, err := o.ObserveAt(s.ID, tun, d, trial.SUCCEEDED, map[string]any{"score": y}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

package optimizers

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

const fidTunables = `{
  "g": {"cost": 1, "params": {
    "a": {"type": "float", "range": [0, 1], "default": 0.5},
    "b": {"type": "float", "range": [0, 1], "default": 0.5},
    "c": {"type": "float", "range": [0, 1], "default": 0.5},
    "duration": {"type": "int", "range": [5, 60], "default": 60},
    "mode": {"type": "categorical", "values": ["x", "y"], "default": "x"},
    "threads": {"type": "int", "range": [1, 8], "default": 1, "special": [-1]}
  }}
}`

// newFidOpt builds a MlosCoreOptimizer over a, b, c (and, with
// withDuration, the int tunable duration) for the given optimizer_type.
func newFidOpt(t *testing.T, typ string, withDuration bool) *MlosCore {
	t.Helper()
	cfg := `{"optimizer_type": "` + typ + `", "max_suggestions": 200, "seed": 3, "start_with_defaults": false}`
	doc, err := source.Parse("opt.jsonc", []byte(`{"class": "bench.optimizers.MlosCoreOptimizer", "config": `+cfg+`}`))
	if err != nil {
		t.Fatal(err)
	}
	text := fidTunables
	if !withDuration {
		// a, b, c only: the fidelity is then a global.
		text = `{"g": {"cost": 1, "params": {
		  "a": {"type": "float", "range": [0, 1], "default": 0.5},
		  "b": {"type": "float", "range": [0, 1], "default": 0.5},
		  "c": {"type": "float", "range": [0, 1], "default": 0.5}}}}`
	}
	tun := groups(t, text)
	m, _ := doc.Root.Get("config").Value().(map[string]any)
	o, err := New(Spec{Class: "bench.optimizers.MlosCoreOptimizer", Config: m, Ref: doc.At(), Tunables: tun})
	if err != nil {
		t.Fatal(err)
	}
	return o.(*MlosCore)
}

// curveScore is a learning curve: the final value (fidelity 27) has its
// minimum 0 at a=0.75, b=0.25, c=0.5; at fidelity r < 27 it is
// pessimistic (an offset shrinking with r, tilted along a) and noisy.
func curveScore(tun *tunables.Groups, r float64, rng *rand.Rand) float64 {
	a, b, c := tun.Get("a").Float(), tun.Get("b").Float(), tun.Get("c").Float()
	final := 4*(a-0.75)*(a-0.75) + 4*(b-0.25)*(b-0.25) + (c-0.5)*(c-0.5)
	left := 1 - math.Log(r)/math.Log(27)
	return final + left*(0.8+0.3*a) + left*0.05*rng.NormFloat64()
}

var fid27 = Fidelity{Param: "epochs", Min: 1, Max: 27, Log: true}

// TestMlosCoreLearnsFromEveryFidelity: SMAC with a fidelity learns from
// outcomes at fidelity 1 (ObserveAt): after 60 of them and 4 at full
// fidelity its suggestions are near the full-fidelity optimum. Only the
// full-fidelity outcomes count for Best.
func TestMlosCoreLearnsFromEveryFidelity(t *testing.T) {
	ctx := context.Background()
	o := newFidOpt(t, "SMAC", false)
	if err := o.SetFidelity(fid27); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	lowBest, fullBest := math.Inf(1), math.Inf(1)
	for round := range 16 {
		sugs, err := o.Suggest(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sugs {
			r := 1.0
			if round == 15 && i < 4 {
				r = 27 // a bracket's last rung
			}
			y := curveScore(s.Tunables, r, rng)
			if r == 27 {
				fullBest = min(fullBest, y)
			} else {
				lowBest = min(lowBest, y)
			}
			if _, err := o.ObserveAt(s.ID, s.Tunables, r, trial.SUCCEEDED, map[string]any{"score": y}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(o.pending) != 0 {
		t.Errorf("%d suggestions still pending after their outcomes", len(o.pending))
	}
	best, ok := o.Best()
	if !ok || best.Scores[0] != fullBest {
		t.Errorf("Best %v, want the best full-fidelity score %v", best.Scores, fullBest)
	}
	sugs, err := o.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	tun := sugs[0].Tunables
	d := math.Hypot(tun.Get("a").Float()-0.75, tun.Get("b").Float()-0.25)
	t.Logf("after 60 outcomes at fidelity 1 and 4 at 27: suggestion a=%.3f b=%.3f (distance %.3f to the optimum)", tun.Get("a").Float(), tun.Get("b").Float(), d)
	if d > 0.15 {
		t.Errorf("suggestion %.3f from the full-fidelity optimum, want <= 0.15", d)
	}
}

// TestMlosCoreFidelityTunable: when the fidelity is a tunable, its own
// dimension is the GP's fidelity input; suggestions carry Max, and an
// outcome at a lower value trains the model without counting for Best.
func TestMlosCoreFidelityTunable(t *testing.T) {
	ctx := context.Background()
	o := newFidOpt(t, "SMAC", true)
	if err := o.SetFidelity(Fidelity{Param: "duration", Min: 5, Max: 60}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 5 {
		sugs, err := o.Suggest(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sugs {
			if got := s.Tunables.Get("duration").Int(); got != 60 {
				t.Fatalf("suggested duration %d, want the full fidelity 60", got)
			}
			run := s.Tunables.Copy()
			if err := run.Get("duration").Set(int64(5)); err != nil {
				t.Fatal(err)
			}
			if _, err := o.ObserveAt(s.ID, run, 5, trial.SUCCEEDED, map[string]any{"score": curveScore(run, 1, rng)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, ok := o.Best(); ok {
		t.Error("a Best from outcomes below full fidelity only")
	}
	if len(o.pending) != 0 || len(o.seen) != 20 {
		t.Errorf("pending %d, seen %d: want 0 and 20", len(o.pending), len(o.seen))
	}
}

// TestMlosCoreSetFidelityErrors: bad settings, a second different
// setting, and outcomes at a fidelity the optimizer cannot place are
// refused with a clear message.
func TestMlosCoreSetFidelityErrors(t *testing.T) {
	for _, c := range []struct {
		f    Fidelity
		want string
	}{
		{Fidelity{Min: 1, Max: 27}, "needs the name"},
		{Fidelity{Param: "epochs", Min: 27, Max: 27}, "Min < Max"},
		{Fidelity{Param: "epochs", Min: 1, Max: math.Inf(1)}, "Min < Max"},
		{Fidelity{Param: "epochs", Min: math.NaN(), Max: 3}, "Min < Max"},
		{Fidelity{Param: "epochs", Min: 0, Max: 27, Log: true}, "log scale needs Min > 0"},
		{Fidelity{Param: "mode", Min: 0, Max: 1}, "int or float without special values"},
		{Fidelity{Param: "threads", Min: 1, Max: 8}, "int or float without special values"},
		{Fidelity{Param: "duration", Min: 1, Max: 60}, "fidelity duration"}, // below the tunable's range
		{Fidelity{Param: "duration", Min: 5, Max: 60.5}, "not an integer"},
	} {
		o := newFidOpt(t, "SMAC", true)
		if err := o.SetFidelity(c.f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetFidelity(%+v) = %v, want an error with %q", c.f, err, c.want)
		}
	}
	o := newFidOpt(t, "SMAC", false)
	tun := o.tunables.Copy()
	if _, err := o.ObserveAt(0, tun, 3, trial.SUCCEEDED, map[string]any{"score": 1.0}); err == nil || !strings.Contains(err.Error(), "before SetFidelity") {
		t.Errorf("ObserveAt before SetFidelity: %v", err)
	}
	if err := o.SetFidelity(fid27); err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(fid27); err != nil {
		t.Errorf("the same setting again: %v", err)
	}
	if err := o.SetFidelity(Fidelity{Param: "epochs", Min: 1, Max: 81}); err == nil || !strings.Contains(err.Error(), "already set") {
		t.Errorf("a different setting: %v", err)
	}
	for _, r := range []float64{0.5, 28, math.NaN()} {
		if _, err := o.ObserveAt(0, tun, r, trial.SUCCEEDED, map[string]any{"score": 1.0}); err == nil || !strings.Contains(err.Error(), "outside [1, 27]") {
			t.Errorf("ObserveAt fidelity %v: %v", r, err)
		}
	}
	if _, err := o.ObserveAt(0, tun, 3, trial.RUNNING, nil); err == nil || !strings.Contains(err.Error(), "only completed trials") {
		t.Errorf("ObserveAt RUNNING: %v", err)
	}
}

// TestMlosCoreFidelityResume: priors with Prior.Fidelity warm-start the
// model on resume, whether BulkRegister comes before or after
// SetFidelity (the same suggestions either way); a configuration tried
// only at a low fidelity is not suggested again, and Best is the best
// full-fidelity prior even when a low-fidelity value is lower.
func TestMlosCoreFidelityResume(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	base := newFidOpt(t, "SMAC", false)
	var priors []Prior
	tried := map[string]bool{}
	fullBest := math.Inf(1)
	for i := range 48 {
		tun := base.tunables.Copy()
		for _, n := range []string{"a", "b", "c"} {
			if err := tun.Get(n).Set(rng.Float64()); err != nil {
				t.Fatal(err)
			}
		}
		r := []float64{1, 1, 3, 1, 9, 27}[i%6]
		y := curveScore(tun, r, rng)
		if r == 27 {
			fullBest = min(fullBest, y)
		}
		tried[tun.Hash()] = true
		priors = append(priors, Prior{Values: tun.Values(), Status: trial.SUCCEEDED, Results: map[string]any{"score": y}, Fidelity: r})
	}
	// A low-fidelity value below every full-fidelity one does not count
	// for Best.
	lucky := base.tunables.Copy()
	for n, v := range map[string]float64{"a": 0.7, "b": 0.3, "c": 0.4} {
		if err := lucky.Get(n).Set(v); err != nil {
			t.Fatal(err)
		}
	}
	tried[lucky.Hash()] = true
	priors = append(priors, Prior{Values: lucky.Values(), Status: trial.SUCCEEDED, Results: map[string]any{"score": fullBest - 0.01}, Fidelity: 3})

	after := newFidOpt(t, "SMAC", false) // SetFidelity, then BulkRegister
	if err := after.SetFidelity(fid27); err != nil {
		t.Fatal(err)
	}
	if err := after.BulkRegister(priors); err != nil {
		t.Fatal(err)
	}
	before := newFidOpt(t, "SMAC", false) // BulkRegister, then SetFidelity
	if err := before.BulkRegister(priors); err != nil {
		t.Fatal(err)
	}
	if _, ok := before.Best(); ok {
		t.Error("priors at a fidelity counted before SetFidelity")
	}
	if err := before.SetFidelity(fid27); err != nil {
		t.Fatal(err)
	}
	var got [2][]string
	for j, o := range []*MlosCore{after, before} {
		best, ok := o.Best()
		if !ok || best.Scores[0] != fullBest {
			t.Errorf("Best %v, want the best full-fidelity prior %v", best.Scores, fullBest)
		}
		sugs, err := o.Suggest(context.Background(), 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sugs {
			if tried[s.Tunables.Hash()] {
				t.Errorf("suggested a configuration tried before: %s", s.Tunables)
			}
			got[j] = append(got[j], s.Tunables.String())
		}
		a, b := sugs[0].Tunables.Get("a").Float(), sugs[0].Tunables.Get("b").Float()
		if d := math.Hypot(a-0.75, b-0.25); d > 0.2 {
			t.Errorf("resumed suggestion a=%.3f b=%.3f is %.3f from the optimum", a, b, d)
		}
	}
	if strings.Join(got[0], ";") != strings.Join(got[1], ";") {
		t.Errorf("BulkRegister before or after SetFidelity differ:\n%v\n%v", got[0], got[1])
	}
}

// TestFidelityWithoutModel: RANDOM and FLAML accept a fidelity; outcomes
// below full fidelity only mark their configuration as tried.
func TestFidelityWithoutModel(t *testing.T) {
	for _, typ := range []string{"RANDOM", "FLAML"} {
		o := newFidOpt(t, typ, false)
		if err := o.SetFidelity(fid27); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 5))
		for i := range 12 {
			sugs, err := o.Suggest(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			r := []float64{1, 3, 27}[i%3]
			if _, err := o.ObserveAt(sugs[0].ID, sugs[0].Tunables, r, trial.SUCCEEDED, map[string]any{"score": curveScore(sugs[0].Tunables, r, rng)}); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
		}
		if len(o.seen) != 12 || len(o.pending) != 0 {
			t.Errorf("%s: seen %d pending %d", typ, len(o.seen), len(o.pending))
		}
		if _, ok := o.Best(); !ok {
			t.Errorf("%s: no Best from the full-fidelity outcomes", typ)
		}
	}
}

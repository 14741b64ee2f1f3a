package optimizers

import (
	"context"
	"errors"
	"github.com/benchtune/bench/trial"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/tunables"
)

const testTunables = `{
  "g": {"cost": 1, "params": {
    "x": {"type": "int", "range": [0, 10], "default": 5},
    "mode": {"type": "categorical", "values": ["a", "b", "c"], "default": "a"}
  }},
  "h": {"cost": 1, "params": {
    "y": {"type": "float", "range": [-1, 1], "default": 0, "quantization_bins": 5}
  }}
}`

func groups(t *testing.T, text string) *tunables.Groups {
	t.Helper()
	doc, err := source.Parse("tunables.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	g, err := tunables.ParseParams(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newOpt(t *testing.T, class string, cfg string) Optimizer {
	t.Helper()
	doc, err := source.Parse("opt.jsonc", []byte(`{"class": "`+class+`", "config": `+cfg+`}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := doc.Root.Get("config").Value().(map[string]any)
	o, err := New(Spec{Class: class, Config: m, Ref: doc.At(), Tunables: groups(t, testTunables)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// quadratic is minimal at x=7, mode=c, y=0.5.
func quadratic(tun *tunables.Groups) float64 {
	x := float64(tun.Get("x").Value().(int64))
	y := tun.Get("y").Value().(float64)
	s := (x-7)*(x-7) + 10*(y-0.5)*(y-0.5)
	if tun.Get("mode").Value() != "c" {
		s += 3
	}
	return s
}

// loop runs n suggest/register rounds and returns the best score.
func loop(t *testing.T, o Optimizer, n int) float64 {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n && o.NotConverged(); i++ {
		tun, err := SuggestOne(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": quadratic(tun)}); err != nil {
			t.Fatal(err)
		}
	}
	best, ok := o.Best()
	if !ok {
		t.Fatal("no best observation")
	}
	return best.Scores[0]
}

func TestOneShot(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.OneShotOptimizer", `{"max_suggestions": 50}`)
	if o.MaxSuggestions() != 1 || o.SupportsPreload() {
		t.Fatalf("max %d preload %v", o.MaxSuggestions(), o.SupportsPreload())
	}
	tun, err := SuggestOne(context.Background(), o)
	if err != nil || !tun.IsDefaults() {
		t.Fatalf("one-shot should suggest the initial (default) values: %v %v", tun, err)
	}
	if o.NotConverged() {
		t.Error("one suggestion only")
	}
}

func TestManualCycles(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.manual_optimizer.ManualOptimizer",
		`{"max_cycles": 2, "tunable_values_cycle": [{"x": 1}, {}, {"x": 9, "mode": "b"}], "max_suggestions": 100}`)
	if o.MaxSuggestions() != 6 {
		t.Fatalf("max suggestions %d, want min(100, 2*3)", o.MaxSuggestions())
	}
	var xs []int64
	for o.NotConverged() {
		tun, err := SuggestOne(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, tun.Get("x").Value().(int64))
	}
	if diff := cmp.Diff([]int64{1, 5, 9, 1, 5, 9}, xs); diff != "" {
		t.Error(diff)
	}
}

func TestMockDeterministic(t *testing.T) {
	run := func() []map[string]any {
		o := newOpt(t, "mlos_bench.optimizers.MockOptimizer", `{"seed": 7, "max_suggestions": 5}`)
		var out []map[string]any
		for o.NotConverged() {
			tun, _ := SuggestOne(context.Background(), o)
			out = append(out, tun.Values())
		}
		return out
	}
	a, b := run(), run()
	if len(a) != 5 || !cmp.Equal(a, b) {
		t.Fatalf("mock optimizer is not deterministic:\n%v\n%v", a, b)
	}
	if a[0]["x"] != int64(5) {
		t.Errorf("first suggestion should be the defaults, got %v", a[0])
	}
}

func TestGridSearch(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.GridSearchOptimizer", `{"max_suggestions": 1000}`)
	seen := map[string]bool{}
	first := true
	for o.NotConverged() {
		tun, err := SuggestOne(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if first && !tun.IsDefaults() {
			t.Error("grid search starts with the defaults")
		}
		first = false
		k := tun.Hash()
		if seen[k] {
			t.Fatalf("grid point suggested twice: %v", tun.Values())
		}
		seen[k] = true
		if _, err := o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": quadratic(tun)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 11*3*5 {
		t.Errorf("visited %d points, want the whole grid of %d", len(seen), 11*3*5)
	}
	best, _ := o.Best()
	if best.Scores[0] != 0 {
		t.Errorf("grid search must find the exact optimum, got %v", best.Scores[0])
	}
}

func TestGridSearchResumeSkipsDoneConfigs(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.GridSearchOptimizer", `{"max_suggestions": 1000, "start_with_defaults": false}`)
	done := []Prior{{Values: map[string]any{"x": "0", "mode": "a", "y": "-1.0"}, Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}}
	if err := o.BulkRegister(done); err != nil {
		t.Fatal(err)
	}
	for o.NotConverged() {
		tun, err := SuggestOne(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		v := tun.Values()
		if v["x"] == int64(0) && v["mode"] == "a" && v["y"] == -1.0 {
			t.Fatal("a configuration registered before the resume was suggested again")
		}
	}
}

func TestGridSearchRejectsContinuous(t *testing.T) {
	doc, _ := source.Parse("opt.jsonc", []byte(`{"class": "mlos_bench.optimizers.GridSearchOptimizer"}`))
	_, err := New(Spec{Class: "mlos_bench.optimizers.GridSearchOptimizer", Config: map[string]any{}, Ref: doc.At(),
		Tunables: groups(t, `{"g": {"cost": 1, "params": {"f": {"type": "float", "range": [0, 1], "default": 0.5}}}}`)})
	if err == nil || !strings.Contains(err.Error(), "grid search needs") {
		t.Fatalf("got %v", err)
	}
}

func TestMlosCoreTypesImprove(t *testing.T) {
	for _, typ := range []string{"RANDOM", "FLAML", "SMAC"} {
		t.Run(typ, func(t *testing.T) {
			o := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "`+typ+`", "max_suggestions": 40, "seed": 3}`)
			if !strings.HasSuffix(o.Name(), typ) {
				t.Errorf("name %q", o.Name())
			}
			best := loop(t, o, 40)
			defaultScore := 4 + 10*0.25 + 3.0
			if best >= defaultScore {
				t.Errorf("%s did not improve on the defaults: best %v, default %v", typ, best, defaultScore)
			}
		})
	}
}

func TestMlosCoreDefaultTypeAndErrors(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{}`)
	if o.Name() != "MlosCoreOptimizer:"+DefaultOptimizerType {
		t.Errorf("default type: %s", o.Name())
	}
	doc, _ := source.Parse("opt.jsonc", []byte("{\"class\": \"x\",\n \"config\": {\"optimizer_type\": \"HYPEROPT\"}}"))
	m, _ := doc.Root.Get("config").Value().(map[string]any)
	_, err := New(Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer", Config: m, Ref: doc.At(), Tunables: groups(t, testTunables)})
	if err == nil || !strings.Contains(err.Error(), "opt.jsonc:2:") || !strings.Contains(err.Error(), "HYPEROPT") {
		t.Errorf("got %v", err)
	}
	_, err = New(Spec{Class: "NoSuchOptimizer", Ref: doc.At()})
	if err == nil || !strings.Contains(err.Error(), "known classes") {
		t.Errorf("got %v", err)
	}
}

func TestRegisterRules(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.MockOptimizer", `{"optimization_targets": {"throughput": "max", "latency": "min"}}`)
	tun, _ := SuggestOne(context.Background(), o)
	scores, err := o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"throughput": 100.0, "latency": "2.5"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{-100, 2.5}, scores); diff != "" {
		t.Errorf("max targets are negated: %s", diff)
	}
	for _, st := range []trial.Status{trial.FAILED, trial.TIMED_OUT, trial.CANCELED} {
		scores, err := o.Observe(0, tun, st, nil)
		if err != nil || !math.IsInf(scores[0], 1) || !math.IsInf(scores[1], 1) {
			t.Errorf("%s should register +Inf, got %v %v", st, scores, err)
		}
	}
	if _, err := o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"throughput": 1.0}); !errors.Is(err, ErrMissingMetric) {
		t.Errorf("missing metric: %v", err)
	}
	if _, err := o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"throughput": "fast", "latency": 1.0}); !errors.Is(err, ErrMissingMetric) {
		t.Errorf("non-numeric metric: %v", err)
	}
	if _, err := o.Observe(0, tun, trial.RUNNING, nil); err == nil {
		t.Error("a running trial cannot be registered")
	}
	// Lexicographic best: throughput first (declared first), then latency.
	_, _ = o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"throughput": 100.0, "latency": 1.0})
	_, _ = o.Observe(0, tun, trial.SUCCEEDED, map[string]any{"throughput": 90.0, "latency": 0.1})
	best, _ := o.Best()
	if diff := cmp.Diff([]float64{-100, 1}, best.Scores); diff != "" {
		t.Error(diff)
	}
	if targets := o.Targets(); targets[0].Name != "throughput" || !targets[0].Max || targets[1].Direction() != "min" {
		t.Errorf("targets keep their config order: %+v", targets)
	}
}

func TestBulkRegisterWarmStart(t *testing.T) {
	o := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "SMAC", "max_suggestions": 10}`)
	priors := []Prior{
		{Values: map[string]any{"x": "7", "mode": "c", "y": "0.5"}, Status: trial.SUCCEEDED, Results: map[string]any{"score": "0"}},
		{Values: map[string]any{"x": "1", "mode": "a", "y": "-1.0"}, Status: trial.FAILED},
		{Values: map[string]any{"x": "2", "mode": "a", "y": "-1.0"}, Status: trial.CANCELED},
	}
	if err := o.BulkRegister(priors); err != nil {
		t.Fatal(err)
	}
	best, ok := o.Best()
	if !ok || best.Scores[0] != 0 || best.Values["x"] != int64(7) {
		t.Fatalf("best after warm start: %+v", best)
	}
	// With prior data the defaults are not forced first.
	tun, err := SuggestOne(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if tun.IsDefaults() {
		t.Error("start_with_defaults is dropped once earlier results exist")
	}
	bad := []Prior{{Values: map[string]any{"nope": "1"}, Status: trial.SUCCEEDED, Results: map[string]any{"score": 1}}}
	if err := o.BulkRegister(bad); err == nil || !strings.Contains(err.Error(), "no longer fits") {
		t.Errorf("got %v", err)
	}
}

func TestSuggestBatchDistinct(t *testing.T) {
	for _, typ := range []string{"SMAC", "FLAML", "RANDOM"} {
		t.Run(typ, func(t *testing.T) {
			o := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "`+typ+`", "max_suggestions": 50}`).(*MlosCore)
			seen := map[string]bool{}
			for round := 0; round < 3; round++ {
				batch, err := o.Suggest(context.Background(), 4)
				if err != nil {
					t.Fatal(err)
				}
				if len(batch) != 4 {
					t.Fatalf("got %d suggestions", len(batch))
				}
				ids := map[int]bool{}
				for _, sg := range batch {
					tun := sg.Tunables
					if sg.ID <= 0 || ids[sg.ID] {
						t.Fatalf("round %d: suggestion id %d is not new and positive", round, sg.ID)
					}
					ids[sg.ID] = true
					if seen[tun.Hash()] {
						t.Fatalf("round %d: %v suggested twice while pending", round, tun.Values())
					}
					seen[tun.Hash()] = true
				}
				// Observe only half, by id: the others stay pending.
				for _, sg := range batch[:2] {
					if _, err := o.Observe(sg.ID, sg.Tunables, trial.SUCCEEDED, map[string]any{"score": quadratic(sg.Tunables)}); err != nil {
						t.Fatal(err)
					}
				}
				if len(o.pending) != 2*(round+1) {
					t.Fatalf("round %d: %d suggestions pending, want %d", round, len(o.pending), 2*(round+1))
				}
			}
		})
	}
}

func TestParetoFront(t *testing.T) {
	got := ParetoFront([][]float64{{1, 5}, {2, 2}, {3, 3}, {5, 1}, {1, 6}})
	if diff := cmp.Diff([]int{0, 1, 3}, got); diff != "" {
		t.Error(diff)
	}
}

// TestNoRepeatsOnLogIntsAndSpecials: several unit coordinates make one
// configuration (ints on a log scale, numeric values ignored under a
// special value); the optimizer must still suggest new configurations.
func TestNoRepeatsOnLogIntsAndSpecials(t *testing.T) {
	g := groups(t, `{"g": {"cost": 1, "params": {
		"level": {"type": "int", "range": [1, 9], "special": [0], "default": 6},
		"block_kb": {"type": "int", "range": [16, 4096], "log": true, "default": 256},
		"workers": {"type": "int", "range": [1, 8], "default": 1},
		"format": {"type": "categorical", "values": ["gzip", "zlib", "flate"], "default": "gzip"}}}}`)
	for _, typ := range []string{"SMAC", "FLAML", "RANDOM"} {
		t.Run(typ, func(t *testing.T) {
			o, err := New(Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer", Tunables: g.Copy(),
				Config: map[string]any{"optimizer_type": typ, "max_suggestions": int64(25), "seed": int64(42)}})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for o.NotConverged() {
				tun, err := SuggestOne(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if seen[tun.Hash()] {
					t.Fatalf("configuration suggested again: %v", tun.Values())
				}
				seen[tun.Hash()] = true
				v := tun.Values()
				score := 1.5 - 0.15*float64(min(v["workers"].(int64), 2)) + 0.01*float64(v["level"].(int64))
				if err := o.BulkRegister([]Prior{{Values: v, Status: trial.SUCCEEDED, Results: map[string]any{"score": score}}}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

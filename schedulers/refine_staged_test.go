package schedulers

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
)

// confirm_refine_mode: "design" by default, "staged" with confirm_refine
// and noise_aware; errors name the file, line, column and JSON path.
func TestDecodeConfirmRefineMode(t *testing.T) {
	checkModeKey(t, "confirm_refine_mode", func(c Config) string { return c.Noise.ConfirmRefineMode }, []modeCase{
		{nil, optimizers.RefineModeDesign},
		{map[string]any{"noise_aware": true, "confirm_top_k": int64(2), "confirm_refine": int64(30)}, optimizers.RefineModeDesign},
		{map[string]any{"noise_aware": true, "confirm_top_k": int64(2), "confirm_refine": int64(30), "confirm_refine_mode": " Staged "}, optimizers.RefineModeStaged},
		{map[string]any{"confirm_refine_mode": "design"}, optimizers.RefineModeDesign},
	}, []modeCase{
		{map[string]any{"noise_aware": true, "confirm_top_k": int64(2), "confirm_refine": int64(30), "confirm_refine_mode": "stages"}, `confirm_refine_mode must be "design" (default) or "staged", got stages`},
		{map[string]any{"confirm_refine_mode": int64(3)}, `confirm_refine_mode must be "design" (default) or "staged", got 3`},
		{map[string]any{"noise_aware": true, "confirm_refine_mode": "staged"}, `confirm_refine_mode "staged" needs confirm_refine > 0`},
		{map[string]any{"confirm_top_k": int64(2), "confirm_refine": int64(30), "confirm_refine_mode": "staged"}, `confirm_refine_mode "staged" needs noise_aware: true`},
	}) // choice_test.go
	doc, err := source.Parse("sched.jsonc", []byte(`{"class": "bench.schedulers.ParallelScheduler", "config": {
  "noise_aware": true, "confirm_top_k": 2,
  "confirm_refine": 30, "confirm_refine_mode": "rounds"
}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfgObj, _ := doc.Root.Get("config").Value().(map[string]any)
	_, err = DecodeConfig("", cfgObj, nil, doc.At(), "e", false)
	if err == nil || !strings.Contains(err.Error(), "sched.jsonc:3:") || !strings.Contains(err.Error(), "/config/confirm_refine_mode") {
		t.Errorf("error %v, want one at sched.jsonc:3 naming /config/confirm_refine_mode", err)
	}
}

// confirm_refine_mode "staged": on a search that has settled (a bowl with
// little noise), the confirm_refine trials run after the search and
// before the confirmation; after 5 trials of a steep function the model
// still expects much more than the noise from its search, and the
// confirmation runs without them.
func TestConfirmRefineStaged(t *testing.T) {
	run := func(name string, sug int64, f func(x float64, rng *rand.Rand) float64) []string {
		st := openStore(t, filepath.Join(t.TempDir(), name+".sqlite"))
		rng := rand.New(rand.NewPCG(7, 8))
		cfg := Config{ExperimentID: name, TrialConfigRepeatCount: 1,
			Noise: NoiseConfig{NoiseAware: true, ConfirmTopK: 2, ConfirmRepeats: 2, ConfirmRefine: 6, ConfirmRefineMode: optimizers.RefineModeStaged}}
		s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "SMAC", "max_suggestions": sug},
			func(ctx context.Context, p environments.Params) environments.Result {
				r := score(p)
				r.Metrics["score"] = f(float64(p["x"].(int64)), rng)
				return r
			})
		if err := s.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		all := trials(t, s.exp)
		var phases []string
		for _, tr := range all {
			phases = append(phases, tr.Metadata[analysis.MetaPhase])
		}
		if _, ok := analysis.Confirm(all, s.sched.targets); !ok {
			t.Errorf("%s: no verdict", name)
		}
		return phases
	}
	got := strings.Join(run("bowl", 12, func(x float64, r *rand.Rand) float64 { return (x-3)*(x-3) + 0.3*r.NormFloat64() }), ",")
	if want := strings.Repeat(",", 11) + strings.Repeat(","+PhaseRefine, 6); !strings.HasPrefix(got, want+","+analysis.PhaseConfirm) {
		t.Errorf("bowl: phases of the trials in order:\n got %q\nwant %q, then the confirmation", got, want)
	}
	got = strings.Join(run("steep", 5, func(x float64, r *rand.Rand) float64 { return math.Exp(x/2) + 0.01*r.NormFloat64() }), ",")
	if strings.Contains(got, PhaseRefine) || !strings.HasPrefix(got, strings.Repeat(",", 4)+","+analysis.PhaseConfirm) {
		t.Errorf("steep, 5 trials: phases %q, want the search then the confirmation, no refinement", got)
	}
}

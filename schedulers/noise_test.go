package schedulers

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func endNote(t *testing.T, st storage.Storage, id string) string {
	t.Helper()
	exp, err := st.LoadExperiment(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return storage.EndReason(exp.Info().Notes)
}

func TestStopWhenConverged(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	cfg := Config{ExperimentID: "conv", TrialConfigRepeatCount: 1, Noise: NoiseConfig{ConvergedTrials: 3, ConvergedImprovement: 0.01}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(50)},
		func(ctx context.Context, p environments.Params) environments.Result {
			return environments.Result{Status: trial.SUCCEEDED, Time: time.Now().UTC(), Metrics: map[string]any{"score": 5.0}}
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(trials(t, s.exp)); n != 4 {
		t.Errorf("a flat score converges after 1+3 trials, ran %d", n)
	}
	r := s.sched.Stats().EndReason
	if !strings.HasPrefix(r, "converged: ") || endNote(t, st, "conv") != r {
		t.Errorf("end reason %q, stored %q", r, endNote(t, st, "conv"))
	}
}

func TestStopAtMaxCost(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	cfg := Config{ExperimentID: "cost", TrialConfigRepeatCount: 1, Noise: NoiseConfig{MaxCost: 2.5, CostMetric: "dollars"}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)},
		func(ctx context.Context, p environments.Params) environments.Result {
			r := score(p)
			r.Metrics["dollars"] = "1" // strings from scripts count too
			return r
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(trials(t, s.exp)); n != 3 {
		t.Errorf("1 dollar a trial, max_cost 2.5: 3 trials, ran %d", n)
	}
	if r := endNote(t, st, "cost"); !strings.HasPrefix(r, "max_cost 2.5 reached") {
		t.Errorf("end reason %q", r)
	}
	// A resume counts the cost already spent: nothing more runs.
	s2 := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)}, scoreRun)
	if err := s2.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(trials(t, s2.exp)); n != 3 {
		t.Errorf("resumed past max_cost: %d trials", n)
	}
}

func TestStopAtMaxTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := newStopper(NoiseConfig{MaxTime: time.Minute}, func() time.Time { return now })
	if r := st.check(); r != "" {
		t.Fatalf("stopped at once: %q", r)
	}
	now = now.Add(61 * time.Second)
	if r := st.check(); r != "max_time 1m0s reached (ran 1m1s)" {
		t.Errorf("reason %q", r)
	}
	// In a run: a limit already spent starts no trial, and says so.
	store := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, store, Config{ExperimentID: "time", TrialConfigRepeatCount: 1, Noise: NoiseConfig{MaxTime: time.Nanosecond}},
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)}, scoreRun)
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(trials(t, s.exp)); n > 1 {
		t.Errorf("max_time 1ns ran %d trials", n)
	}
	if r := endNote(t, store, "time"); !strings.HasPrefix(r, "max_time 1ns reached") {
		t.Errorf("end reason %q", r)
	}
}

func TestEndReasonBudget(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "b", TrialConfigRepeatCount: 1}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(2)}, scoreRun)
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := endNote(t, st, "b"); r != "budget spent: max_suggestions 2" {
		t.Errorf("end reason %q", r)
	}
}

// The confirmation re-runs the top k and the defaults, interleaved, and
// stores its verdict.
func TestConfirmPhase(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := Config{ExperimentID: "conf", TrialConfigRepeatCount: 1, Noise: NoiseConfig{ConfirmTopK: 2, ConfirmRepeats: 6}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(8)},
		func(ctx context.Context, p environments.Params) environments.Result {
			r := score(p)
			r.Metrics["score"] = r.Metrics["score"].(float64) + rng.Float64() // noise
			return r
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := trials(t, s.exp)
	var conf []storage.Trial
	for _, tr := range all {
		if analysis.IsConfirm(tr) {
			conf = append(conf, tr)
		}
	}
	if len(conf) != 3*6 {
		t.Fatalf("2 candidates and the defaults, 6 rounds: 18 confirmation trials, got %d", len(conf))
	}
	// Interleaved: each round runs the three configurations once.
	for r := 0; r < 6; r++ {
		seen := map[string]bool{}
		for _, tr := range conf[3*r : 3*r+3] {
			seen[tr.ConfigHash] = true
			if tr.Metadata[analysis.MetaRound] != string(rune('1'+r)) {
				t.Errorf("trial %d in round %d has round %s", tr.ID, r+1, tr.Metadata[analysis.MetaRound])
			}
		}
		if len(seen) != 3 {
			t.Errorf("round %d ran %d distinct configurations", r+1, len(seen))
		}
	}
	v, ok := analysis.Confirm(all, s.sched.targets)
	if !ok || len(v.Candidates) != 2 || v.DefaultN != 6 {
		t.Fatalf("verdict %+v", v)
	}
	exp, _ := st.LoadExperiment(context.Background(), "conf")
	found := false
	for _, n := range exp.Info().Notes {
		found = found || n == ConfirmPrefix+v.Line()
	}
	if !found || s.sched.Stats().Confirmation != v.Line() {
		t.Errorf("verdict %q not stored: notes %q", v.Line(), exp.Info().Notes)
	}
}

func scoreRun(_ context.Context, p environments.Params) environments.Result { return score(p) }

// A noise-aware run names its model's best in a note, which the stored
// answer then uses; repeats are aggregated.
func TestNoiseAwareBestNote(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := Config{ExperimentID: "na", TrialConfigRepeatCount: 2, Noise: NoiseConfig{NoiseAware: true}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "SMAC", "max_suggestions": int64(8)},
		func(ctx context.Context, p environments.Params) environments.Result {
			r := score(p)
			r.Metrics["score"] = r.Metrics["score"].(float64) + 3*rng.Float64()
			return r
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp, _ := st.LoadExperiment(context.Background(), "na")
	a, ok := analysis.Best(exp.Info().Notes, trials(t, s.exp), s.sched.targets, nil)
	if !ok || a.Basis != analysis.BasisModel || a.Config.Succeeded != 2 {
		t.Fatalf("answer %+v, notes %q", a, exp.Info().Notes)
	}
	if !strings.Contains(s.sched.Stats().NoiseBest, "learned noise") {
		t.Errorf("noise level not reported: %q", s.sched.Stats().NoiseBest)
	}
}

func repeatCounts(ts []storage.Trial) map[string]int {
	n := map[string]int{}
	for _, tr := range ts {
		n[tr.Params["x"]]++
	}
	return n
}

// Racing repeats the configurations that could be the best and runs the
// clearly worse ones once.
func TestRacing(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	rng := rand.New(rand.NewPCG(5, 6))
	cfg := Config{ExperimentID: "race", TrialConfigRepeatCount: 4, Noise: NoiseConfig{Racing: true}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(10), "seed": int64(2)},
		func(ctx context.Context, p environments.Params) environments.Result {
			r := score(p)
			r.Metrics["score"] = r.Metrics["score"].(float64) + rng.Float64()
			return r
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	counts := repeatCounts(ts)
	once, full := 0, 0
	for _, n := range counts {
		if n == 1 {
			once++
		}
		if n == 4 {
			full++
		}
		if n > 4 {
			t.Errorf("a configuration ran %d times, more than trial_config_repeat_count", n)
		}
	}
	if len(counts) != 10 || len(ts) >= 40 || once == 0 || full == 0 {
		t.Errorf("racing: %d trials over %d configurations, runs per configuration %v", len(ts), len(counts), counts)
	}
	// The best configuration (x=3 scores 0..1) got its full repeats.
	if n, ok := counts["3"]; ok && n != 4 {
		t.Errorf("the best configuration ran %d times", n)
	}
}

// repeat_spread interleaved: every repeat runs, not back to back.
func TestRepeatsInterleaved(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	cfg := Config{ExperimentID: "spread", TrialConfigRepeatCount: 3, Noise: NoiseConfig{RepeatSpread: SpreadInterleaved}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(4)}, scoreRun)
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	if len(ts) != 12 {
		t.Fatalf("4 configurations x 3 repeats: 12 trials, got %d", len(ts))
	}
	for _, n := range repeatCounts(ts) {
		if n != 3 {
			t.Errorf("runs per configuration %v", repeatCounts(ts))
		}
	}
	backToBack := 0
	for i := 1; i < len(ts); i++ {
		if ts[i].Params["x"] == ts[i-1].Params["x"] {
			backToBack++
		}
	}
	if backToBack > 4 {
		t.Errorf("%d of 11 consecutive trials ran the same configuration: not interleaved", backToBack)
	}
}

// confirm_refine runs a local design around the model's best after the
// search, before the confirmation, and confirms the minimiser of the
// posterior mean there with the k best.
func TestConfirmRefine(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	rng := rand.New(rand.NewPCG(7, 8))
	cfg := Config{ExperimentID: "refine", TrialConfigRepeatCount: 1,
		Noise: NoiseConfig{NoiseAware: true, ConfirmTopK: 2, ConfirmRepeats: 2, ConfirmRefine: 4}}
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "SMAC", "max_suggestions": int64(10)},
		func(ctx context.Context, p environments.Params) environments.Result {
			r := score(p)
			r.Metrics["score"] = r.Metrics["score"].(float64) + rng.Float64()
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
	want := strings.Repeat(",", 9) + strings.Repeat(","+PhaseRefine, 4) + strings.Repeat(","+analysis.PhaseConfirm, 3*2)
	if got := strings.Join(phases, ","); got != want {
		t.Fatalf("phases of the trials in order:\n got %q\nwant %q", got, want)
	}
	if _, ok := analysis.Confirm(all, s.sched.targets); !ok {
		t.Error("no verdict after the refinement")
	}
	// Without noise_aware there is nothing to refine with: the
	// confirmation runs as before.
	st2 := openStore(t, filepath.Join(t.TempDir(), "db2.sqlite"))
	cfg.ExperimentID, cfg.Noise.NoiseAware = "plain", false
	s2 := newSetup(t, st2, cfg, map[string]any{"optimizer_type": "SMAC", "max_suggestions": int64(6)}, scoreRun)
	if err := s2.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range trials(t, s2.exp) {
		if tr.Metadata[analysis.MetaPhase] == PhaseRefine {
			t.Fatalf("trial %d is a refinement trial without noise_aware", tr.ID)
		}
	}
}

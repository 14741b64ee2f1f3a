package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

func TestDecodeFidelity(t *testing.T) {
	doc, err := source.Parse("sched.jsonc", []byte(`{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "budget", "min": 9, "max": 3, "eta": 1, "promotion": "resume"}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfgObj, _ := doc.Root.Get("config").Value().(map[string]any)
	_, err = DecodeConfig("", cfgObj, nil, doc.At(), "e", false)
	// The first problem, with its file, line, column and JSON path.
	if err == nil || !strings.Contains(err.Error(), "sched.jsonc:2:") || !strings.Contains(err.Error(), "/config/fidelity/max") ||
		!strings.Contains(err.Error(), "fidelity.max (3, full fidelity) must be greater than fidelity.min (9)") {
		t.Errorf("error %v", err)
	}
	for _, tc := range []struct {
		in   any
		cfg  map[string]any
		want FidelityConfig
		err  string
	}{
		{in: "", want: FidelityConfig{}},
		{in: "off", want: FidelityConfig{}},
		{in: map[string]any{"param": "budget", "min": int64(1), "max": int64(9)},
			want: FidelityConfig{Param: "budget", Min: 1, Max: 9, Eta: 3, Promotion: "rerun", CheckpointDir: "bench-checkpoints", PromoteBy: "observed", Start: "bracket", StartConfidence: 0.5}},
		{in: map[string]any{"param": "d", "min": 5.0, "max": int64(60), "eta": int64(2), "brackets": int64(1), "promotion": "continue", "checkpoint_dir": "/tmp/x"},
			want: FidelityConfig{Param: "d", Min: 5, Max: 60, Eta: 2, Brackets: 1, Promotion: "continue", CheckpointDir: "/tmp/x", PromoteBy: "observed", Start: "bracket", StartConfidence: 0.5}},
		{in: "duration_s:5:60:3", want: FidelityConfig{Param: "duration_s", Min: 5, Max: 60, Eta: 3, Promotion: "rerun", CheckpointDir: "bench-checkpoints", PromoteBy: "observed", Start: "bracket", StartConfidence: 0.5}},
		{in: `{"param": "n", "min": 1, "max": 27, "promotion": "continue"}`,
			want: FidelityConfig{Param: "n", Min: 1, Max: 27, Eta: 3, Promotion: "continue", CheckpointDir: "bench-checkpoints", PromoteBy: "observed", Start: "bracket", StartConfidence: 0.5}},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(9), "promote_by": "model", "start": "model", "start_confidence": 0.7},
			want: FidelityConfig{Param: "d", Min: 1, Max: 9, Eta: 3, Promotion: "rerun", CheckpointDir: "bench-checkpoints", PromoteBy: "model", Start: "model", StartConfidence: 0.7}},
		{in: `{"param": "n", "min": 1, "max": 27, "promote_by": "model", "start_confidence": "0.9"}`,
			want: FidelityConfig{Param: "n", Min: 1, Max: 27, Eta: 3, Promotion: "rerun", CheckpointDir: "bench-checkpoints", PromoteBy: "model", Start: "bracket", StartConfidence: 0.9}},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "promote_by": "best"}, err: "/config/fidelity/promote_by: fidelity.promote_by must be \"observed\" (the values observed at the rung, ASHA's rule) or \"model\""},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "start": "full"}, err: "/config/fidelity/start: fidelity.start must be \"bracket\""},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "start_confidence": int64(1)}, err: "/config/fidelity/start_confidence: fidelity.start_confidence must be a number between 0 and 1 (exclusive), got 1"},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "start_confidence": "high"}, err: "/config/fidelity/start_confidence: fidelity.start_confidence must be a number between 0 and 1"},
		{in: map[string]any{"param": "d", "min": int64(5), "max": int64(5)}, err: "/config/fidelity/max: fidelity.max (5, full fidelity) must be greater than fidelity.min (5)"},
		{in: map[string]any{"param": "d", "min": int64(0), "max": int64(5)}, err: "/config/fidelity/min: fidelity.min must be > 0"},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "eta": int64(1)}, err: "/config/fidelity/eta: fidelity.eta must be an integer >= 2, got 1"},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(27), "brackets": int64(5)}, err: "/config/fidelity/brackets: fidelity.brackets must be at most the number of rungs (4: 1, 3, 9, 27), got 5"},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "promotion": "resume"}, err: "/config/fidelity/promotion: fidelity.promotion must be \"rerun\" or \"continue\""},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "mx": int64(3)}, err: "/config/fidelity/mx: fidelity: unknown key \"mx\" (did you mean \"max\"?)"},
		{in: map[string]any{"min": int64(1), "max": int64(5)}, err: "/config/fidelity/param: fidelity.param must name"},
		{in: map[string]any{"param": "d", "min": "five", "max": int64(5)}, err: "/config/fidelity/min: fidelity.min must be a number, got \"five\""},
		{in: map[string]any{"param": "d", "max": int64(5)}, err: "/config/fidelity/min: fidelity.min is required"},
		{in: map[string]any{"param": "d", "min": int64(1), "max": "inf"}, err: "/config/fidelity/max: fidelity.max must be a finite number, got inf"},
		{in: map[string]any{"param": "d", "min": "nan", "max": int64(5)}, err: "/config/fidelity/min: fidelity.min must be a number, got \"nan\""},
		{in: map[string]any{"param": "d", "min": int64(1), "max": int64(5), "start_confidence": "nan"}, err: "fidelity.start_confidence must be a number between 0 and 1"},
		{in: "d:1", err: "fidelity must be an object like"},
		{in: int64(3), err: "fidelity must be an object like"},
		{in: "d:1:9", cfg: map[string]any{"pruner": "asha"}, err: "fidelity and pruner cannot be combined"},
		{in: "d:1:9", cfg: map[string]any{"trial_config_repeat_count": int64(3)}, err: "fidelity cannot be combined with trial_config_repeat_count 3"},
		{in: "d:1:9", cfg: map[string]any{"reuse_from": "other"}, err: "fidelity cannot be combined with reuse_from \"other\""},
	} {
		c := map[string]any{"fidelity": tc.in}
		for k, v := range tc.cfg {
			c[k] = v
		}
		got, err := DecodeConfig("", c, nil, source.Ref{}, "e", false)
		if !wantDecoded(t, tc.in, err, tc.err) {
			continue
		}
		got.Fidelity.Ref = source.Ref{}
		if fmt.Sprintf("%+v", got.Fidelity) != fmt.Sprintf("%+v", tc.want) {
			t.Errorf("%v: %+v, want %+v", tc.in, got.Fidelity, tc.want)
		}
	}
	// A global (--fidelity) sets it like the config key.
	got, err := DecodeConfig("", nil, map[string]any{"fidelity": "budget:1:9"}, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.Param != "budget" || got.Fidelity.Max != 9 {
		t.Errorf("global: %+v %v", got.Fidelity, err)
	}
	// A bad global is reported as the global, not at the file's key.
	_, err = DecodeConfig("", cfgObj, map[string]any{"fidelity": "budget:9:1"}, doc.At(), "e", false)
	if err == nil || strings.Contains(err.Error(), "sched.jsonc") || !strings.Contains(err.Error(), "at /fidelity/max: fidelity.max (1, full fidelity)") {
		t.Errorf("bad global: %v", err)
	}
}

func fidTunables(t testing.TB) *tunables.Groups {
	doc, _ := source.Parse("t.jsonc", []byte(`{"g": {"cost": 1, "params": {
		"x": {"type": "int", "range": [0, 20], "default": 10},
		"epochs": {"type": "int", "range": [1, 30], "default": 30},
		"frac": {"type": "float", "range": [0.01, 1], "default": 1},
		"mode": {"type": "categorical", "values": ["a", "b"], "default": "a"}}}}`))
	g, err := tunables.ParseParams(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCheckFidelity(t *testing.T) {
	tun := fidTunables(t)
	known := map[string]bool{"duration_s": true}
	for _, tc := range []struct {
		f   FidelityConfig
		err string
	}{
		{FidelityConfig{Param: "epochs", Min: 1, Max: 27, Eta: 3}, ""},
		{FidelityConfig{Param: "frac", Min: 0.1, Max: 1, Eta: 3}, ""},
		{FidelityConfig{Param: "duration_s", Min: 5, Max: 60, Eta: 3}, ""},
		{FidelityConfig{Param: "epochs", Min: 1, Max: 81, Eta: 3}, "tunable \"epochs\" has the range [1, 30], which does not cover fidelity.min..max (1..81)"},
		{FidelityConfig{Param: "frac", Min: 0.001, Max: 1, Eta: 3}, "does not cover"},
		{FidelityConfig{Param: "epochs", Min: 1.5, Max: 27, Eta: 3}, "is an integer: min and max must be integers"},
		{FidelityConfig{Param: "mode", Min: 1, Max: 2, Eta: 3}, "tunable \"mode\" is categorical"},
		{FidelityConfig{Param: "duration", Min: 5, Max: 60, Eta: 3}, "fidelity.param \"duration\" is neither a tunable nor a parameter that any config has (did you mean \"duration_s\"?)"},
	} {
		err := CheckFidelity(tc.f, tun, known)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: error %v, want %q", tc.f, err, tc.err)
		}
	}
}

// fidRunner runs a trial in-process: score (x-3)² + 10/fidelity, where
// the fidelity is the trial's value of param (a global or a tunable). It
// records each run's spec.
type fidRunner struct {
	id    int
	param string
	mu    *sync.Mutex
	runs  *[]Spec
	hook  func(spec Spec)
}

func (r *fidRunner) ID() int                        { return r.id }
func (r *fidRunner) Teardown(context.Context) error { return nil }
func (r *fidRunner) Close() error                   { return nil }
func (r *fidRunner) Run(ctx context.Context, spec Spec) trial.Outcome {
	r.mu.Lock()
	*r.runs = append(*r.runs, spec)
	r.mu.Unlock()
	if r.hook != nil {
		r.hook(spec)
	}
	if ctx.Err() != nil {
		st, reason, _ := trial.StopCause(ctx)
		return trial.Outcome{Status: st, Ts: time.Now().UTC(), FailureReason: reason}
	}
	x, _ := strconv.ParseFloat(spec.Params["x"], 64)
	f, ok := trial.Numeric(spec.Globals[r.param])
	if !ok || f <= 0 {
		return trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC(), FailureReason: fmt.Sprintf("no fidelity %v", spec.Globals[r.param])}
	}
	return trial.Outcome{Status: trial.SUCCEEDED, Ts: time.Now().UTC(), Results: map[string]any{"score": (x-3)*(x-3) + 10/f}}
}

// obsOpt records what the optimizer is told; it passes Withdraw on.
type obsOpt struct {
	optimizers.Optimizer
	mu        sync.Mutex
	observed  []map[string]string // the values of each observation
	ids       []int
	withdrawn []int
}

func (o *obsOpt) Observe(id int, tun *tunables.Groups, st trial.Status, res map[string]any) ([]float64, error) {
	o.mu.Lock()
	o.observed = append(o.observed, tun.StringValues())
	o.ids = append(o.ids, id)
	o.mu.Unlock()
	return o.Optimizer.Observe(id, tun, st, res)
}

func (o *obsOpt) Withdraw(id int) {
	o.withdrawn = append(o.withdrawn, id)
	o.Optimizer.(optimizers.Withdrawer).Withdraw(id)
}

// awareOpt is a FidelityAware optimizer (over random search) that records
// SetFidelity and ObserveAt.
type awareOpt struct {
	obsOpt
	set   []optimizers.Fidelity
	atIDs []int
	atF   []float64
	atCfg []string
}

func (o *awareOpt) SetFidelity(f optimizers.Fidelity) error { o.set = append(o.set, f); return nil }
func (o *awareOpt) ObserveAt(id int, tun *tunables.Groups, f float64, st trial.Status, res map[string]any) ([]float64, error) {
	o.atIDs = append(o.atIDs, id)
	o.atF = append(o.atF, f)
	o.atCfg = append(o.atCfg, cfgKey(tun.StringValues(), "epochs"))
	return o.Optimizer.Observe(id, tun, st, res)
}

type fidSetup struct {
	s    *Scheduler
	exp  storage.Experiment
	runs *[]Spec
	mu   *sync.Mutex
}

// newFid builds a scheduler with n runners and fidelity fc on a store.
func newFid(t *testing.T, st storage.Storage, fc map[string]any, extra map[string]any, n int, opt optimizers.Optimizer, hook func(Spec), obs ...Observer) fidSetup {
	t.Helper()
	c := map[string]any{"fidelity": fc, "reuse": true}
	for k, v := range extra {
		c[k] = v
	}
	cfg, err := DecodeConfig("bench.schedulers.ParallelScheduler", c, nil, source.Ref{}, "e", false)
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs []Spec
	var runners []Runner
	for i := 1; i <= n; i++ {
		runners = append(runners, &fidRunner{id: i, param: cfg.Fidelity.Param, mu: &mu, runs: &runs, hook: hook})
	}
	o := Options{Tunables: fidTunables(t), Tick: 10 * time.Millisecond,
		Globals: map[string]any{"experiment_id": "e", "budget": int64(9)}}
	if len(obs) > 0 {
		o.Observer = obs[0]
	}
	s, err := New(cfg, runners, opt, exp, o)
	if err != nil {
		t.Fatal(err)
	}
	return fidSetup{s, exp, &runs, &mu}
}

func randomOpt(t *testing.T, n int64) optimizers.Optimizer {
	t.Helper()
	o, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
		Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": n, "seed": int64(7)}, Tunables: fidTunables(t)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// checkPlan checks the stored trials of a multi-fidelity run: every
// (configuration, rung) ran once (retries aside), each promotion follows
// a success of the same configuration at the rung below, and the value
// the trial got for the fidelity parameter is the one recorded.
func checkPlan(t *testing.T, trs []storage.Trial, param string, runs []Spec) map[string][]int {
	t.Helper()
	byID := map[int]storage.Trial{}
	for _, tr := range trs {
		byID[tr.ID] = tr
	}
	seen := map[string]bool{}
	rungs := map[string][]int{} // config (x) -> rungs in trial order
	for _, tr := range trs {
		if tr.RetryOf != 0 {
			continue
		}
		x := cfgKey(tr.Params, param)
		rung, _ := strconv.Atoi(tr.Metadata[trial.FidelityRungKey])
		bracket, _ := strconv.Atoi(tr.Metadata[trial.FidelityBracketKey])
		key := x + "@" + tr.Metadata[trial.FidelityKey]
		if seen[key] {
			t.Errorf("configuration x=%s ran twice at fidelity %s", x, tr.Metadata[trial.FidelityKey])
		}
		seen[key] = true
		if rung > bracket {
			rs := rungs[x]
			if len(rs) == 0 || rs[len(rs)-1] != rung-1 {
				t.Errorf("trial %d: x=%s promoted to rung %d without a run at rung %d (%v)", tr.ID, x, rung, rung-1, rs)
			}
		} else if len(rungs[x]) > 0 {
			t.Errorf("trial %d: x=%s started twice", tr.ID, x)
		}
		rungs[x] = append(rungs[x], rung)
	}
	for _, sp := range runs {
		tr := byID[sp.TrialID]
		want := tr.Metadata[trial.FidelityKey]
		if got := fmt.Sprint(sp.Globals[param]); got != want {
			t.Errorf("trial %d ran with %s=%s, want %s", sp.TrialID, param, got, want)
		}
	}
	return rungs
}

// cfgKey names a configuration: its values but the fidelity's.
func cfgKey(params map[string]string, param string) string {
	var parts []string
	for _, k := range []string{"x", "epochs", "frac", "mode"} {
		if k != param {
			parts = append(parts, k+"="+params[k])
		}
	}
	return strings.Join(parts, ",")
}

// TestFidelityHyperband: a global fidelity (budget 1..9, eta 3: rungs 1,
// 3, 9) with 4 runners and random search: new configurations start at
// their bracket's first rung, the top 1/eta are promoted, the trial gets
// the value as its global, the optimizer (not FidelityAware) sees only
// full-fidelity outcomes and none of its suggestions is left pending,
// and the best trial is a full-fidelity one.
func TestFidelityHyperband(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := &obsOpt{Optimizer: randomOpt(t, 15)}
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "eta": int64(3)}, nil, 4, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	rungs := checkPlan(t, trs, "budget", *fs.runs)
	if len(rungs) != 15 {
		t.Errorf("%d configurations, want 15 (max_suggestions)", len(rungs))
	}
	promoted, full := 0, 0
	for _, tr := range trs {
		if tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d %s %s", tr.ID, tr.Status, tr.FailureReason)
		}
		r, _ := strconv.Atoi(tr.Metadata[trial.FidelityRungKey])
		b, _ := strconv.Atoi(tr.Metadata[trial.FidelityBracketKey])
		if r > b {
			promoted++
		}
		if !trial.LowFidelity(tr.Metadata) {
			full++
		}
	}
	if promoted == 0 || full == 0 {
		t.Errorf("%d promotions, %d full-fidelity trials of %d", promoted, full, len(trs))
	}
	if len(opt.observed) != full {
		t.Errorf("the optimizer observed %d outcomes, want the %d full-fidelity ones", len(opt.observed), full)
	}
	for _, v := range opt.observed {
		if v["x"] == "" {
			t.Errorf("observation without x: %v", v)
		}
	}
	checkBestFull(t, fs, trs)
	if fs.s.Stats().Planned != 0 {
		t.Errorf("planned %d, want 0 (unknown)", fs.s.Stats().Planned)
	}
	// Every suggestion was settled: observed at full fidelity or
	// withdrawn after a lower one.
	settled := map[int]bool{}
	for _, id := range append(append([]int{}, opt.ids...), opt.withdrawn...) {
		if id > 0 {
			settled[id] = true
		}
	}
	if len(settled) != 15 {
		t.Errorf("%d of 15 suggestions settled (observed %v, withdrawn %v)", len(settled), opt.ids, opt.withdrawn)
	}
}

// TestFidelityAwareOptimizer: a FidelityAware optimizer is told the
// fidelity once and every outcome with its fidelity: the suggestion id
// the first time, 0 for promotions; Observe is not used.
func TestFidelityAwareOptimizer(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := &awareOpt{obsOpt: obsOpt{Optimizer: randomOpt(t, 10)}}
	fs := newFid(t, st, map[string]any{"param": "epochs", "min": int64(1), "max": int64(27), "eta": int64(3), "brackets": int64(2)}, nil, 2, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(opt.set) != 1 || opt.set[0] != (optimizers.Fidelity{Param: "epochs", Min: 1, Max: 27}) {
		t.Errorf("SetFidelity calls %+v", opt.set)
	}
	trs := trials(t, fs.exp)
	if len(opt.atIDs) != len(trs) || len(opt.ids) != 0 {
		t.Fatalf("ObserveAt %d times, Observe %d times, for %d trials", len(opt.atIDs), len(opt.ids), len(trs))
	}
	firstOf := map[string]bool{}
	for i, id := range opt.atIDs {
		first := !firstOf[opt.atCfg[i]]
		firstOf[opt.atCfg[i]] = true
		if first != (id > 0) {
			t.Errorf("observation %d (x=%s at %g): id %d, first %v", i, opt.atCfg[i], opt.atF[i], id, first)
		}
	}
	// The fidelity is a tunable here: each trial's stored value is its
	// rung, brackets 0 and 1 start at 1 and 3.
	for _, tr := range trs {
		if tr.Params["epochs"] != tr.Metadata[trial.FidelityKey] {
			t.Errorf("trial %d: epochs %s, fidelity %s", tr.ID, tr.Params["epochs"], tr.Metadata[trial.FidelityKey])
		}
		if b := tr.Metadata[trial.FidelityBracketKey]; b != "0" && b != "1" {
			t.Errorf("trial %d in bracket %s", tr.ID, b)
		}
	}
	checkPlan(t, trs, "epochs", *fs.runs)
}

// TestFidelityContinue: promotion "continue" tells a promoted trial the
// trial it continues and the configuration's checkpoint directory, the
// same across its rungs.
func TestFidelityContinue(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	dir := t.TempDir()
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1),
		"promotion": "continue", "checkpoint_dir": dir}, nil, 1, randomOpt(t, 9), nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := map[int]Spec{}
	for _, sp := range *fs.runs {
		byID[sp.TrialID] = sp
	}
	promoted := 0
	for _, sp := range *fs.runs {
		ckpt, _ := sp.Globals[trial.CheckpointDirKey].(string)
		if !strings.HasPrefix(ckpt, filepath.Join(dir, "e")+"/config-") {
			t.Errorf("trial %d: checkpoint dir %q", sp.TrialID, ckpt)
		}
		from, ok := sp.Globals[trial.ContinueFromKey]
		if sp.Globals[trial.FidelityKey] == "1" {
			if ok {
				t.Errorf("trial %d at the first rung continues %v", sp.TrialID, from)
			}
			continue
		}
		promoted++
		fromID, _ := strconv.Atoi(from.(string))
		prev, found := byID[fromID]
		if !found || cfgKey(prev.Params, "budget") != cfgKey(sp.Params, "budget") || prev.Globals[trial.CheckpointDirKey] != ckpt {
			t.Errorf("trial %d (x=%s) continues %v (x=%s, dir %v)", sp.TrialID, sp.Params["x"], from, prev.Params["x"], prev.Globals[trial.CheckpointDirKey])
		}
	}
	if promoted == 0 {
		t.Error("no promotion")
	}
}

// TestFidelityMaxTrialsCountsFullFidelity: max_trials counts the
// full-fidelity trials only.
func TestFidelityMaxTrialsCountsFullFidelity(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9)}, map[string]any{"max_trials": int64(2)}, 2, randomOpt(t, 100), nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	full := 0
	for _, tr := range trs {
		if !trial.LowFidelity(tr.Metadata) {
			full++
		}
	}
	if full != 2 || len(trs) <= 2 {
		t.Errorf("%d full-fidelity trials of %d, want 2 of more", full, len(trs))
	}
	if r := fs.s.Stats().EndReason; r != "budget spent: max_trials 2 (full-fidelity trials)" {
		t.Errorf("end reason %q", r)
	}
}

// cancelAfter cancels a run once n trials finished.
type cancelAfter struct {
	n, done int
	cancel  context.CancelFunc
}

func (c *cancelAfter) TrialStarted(storage.Trial) {}
func (c *cancelAfter) TrialFinished(storage.Trial, trial.Outcome, *Best) {
	if c.done++; c.done == c.n {
		c.cancel()
	}
}

// TestFidelityResume: runs stopped (as by a kill) with a promotion earned
// but not started, or with a promoted trial running, then resumed with a
// re-seeded optimizer: the due promotion is made first, the interrupted
// trial runs again as itself, no (configuration, fidelity) runs twice, and
// the plan completes its budget.
func TestFidelityResume(t *testing.T) {
	fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1)}
	for _, interruptPromotion := range []bool{false, true} {
		t.Run(fmt.Sprint("interrupted promotion ", interruptPromotion), func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var fs fidSetup
			if interruptPromotion {
				n := 0
				fs = newFid(t, st, fc, nil, 1, randomOpt(t, 8), func(Spec) {
					if n++; n == 4 {
						cancel() // the 4th trial is the promotion earned by 3 at rung 0
					}
				})
			} else {
				fs = newFid(t, st, fc, nil, 1, randomOpt(t, 8), nil, &cancelAfter{n: 3, cancel: cancel})
			}
			if err := fs.s.Start(ctx); err == nil {
				t.Fatal("the first run was not interrupted")
			}
			before := trials(t, fs.exp)
			bestX, bestS := "", 1e300
			for _, tr := range before[:3] {
				if v, _ := trial.Numeric(tr.Results["score"]); v < bestS {
					bestX, bestS = cfgKey(tr.Params, "budget"), v
				}
			}
			fs2 := newFid(t, st, fc, nil, 1, randomOpt(t, 8), nil)
			if err := fs2.s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			runs := *fs2.runs
			if interruptPromotion {
				if len(before) != 4 || before[3].Finished() || before[3].Metadata[trial.FidelityRungKey] != "1" {
					t.Fatalf("first run: %d trials, want the 4th, a promotion, unfinished", len(before))
				}
				if runs[0].TrialID != before[3].ID {
					t.Errorf("resume ran trial %d first, want the interrupted %d", runs[0].TrialID, before[3].ID)
				}
			} else if len(before) != 3 {
				t.Fatalf("first run: %d trials, want 3", len(before))
			}
			if cfgKey(runs[0].Params, "budget") != bestX || runs[0].Globals["budget"] != int64(3) {
				t.Errorf("first run of the resume: %s at %v, want the promotion of %s to 3", cfgKey(runs[0].Params, "budget"), runs[0].Globals["budget"], bestX)
			}
			all := trials(t, fs2.exp)
			checkPlan(t, all, "budget", append(*fs.runs, runs...))
			checkResumedAll(t, all, 8)
		})
	}
}

// priorsOpt records the priors it is warm-started with.
type priorsOpt struct {
	optimizers.Optimizer
	priors []optimizers.Prior
}

func (o *priorsOpt) BulkRegister(p []optimizers.Prior) error {
	o.priors = append(o.priors, p...)
	return o.Optimizer.BulkRegister(p)
}

// TestFidelityPriors: on resume the optimizer is warm-started with the
// full-fidelity outcomes only (not FidelityAware), also when the fidelity
// was switched off since; a FidelityAware one gets every outcome with its
// fidelity.
func TestFidelityPriors(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9)}
	fs := newFid(t, st, fc, nil, 2, randomOpt(t, 12), nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	full := 0
	for _, tr := range trs {
		if !trial.LowFidelity(tr.Metadata) {
			full++
		}
	}
	for _, tc := range []struct {
		name  string
		fc    any
		aware bool
		want  int
	}{{"fidelity on", fc, false, full}, {"fidelity off", "", false, full}, {"FidelityAware", fc, true, len(trs)}} {
		p := &priorsOpt{Optimizer: randomOpt(t, 12)}
		var opt optimizers.Optimizer = p
		if tc.aware {
			opt = &awarePriors{priorsOpt: p}
		}
		c := map[string]any{"fidelity": tc.fc}
		cfg, err := DecodeConfig("bench.schedulers.ParallelScheduler", c, nil, source.Ref{}, "e", false)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var runs []Spec
		s, err := New(cfg, []Runner{&fidRunner{id: 1, param: "budget", mu: &mu, runs: &runs}}, opt, fs.exp,
			Options{Tunables: fidTunables(t), Tick: 10 * time.Millisecond, Globals: map[string]any{"budget": int64(9)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.newDispatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(p.priors) != tc.want {
			t.Errorf("%s: %d priors, want %d", tc.name, len(p.priors), tc.want)
		}
		for _, pr := range p.priors {
			if tc.aware != (pr.Fidelity > 0) {
				t.Errorf("%s: prior at fidelity %g", tc.name, pr.Fidelity)
			}
		}
	}
}

type awarePriors struct{ *priorsOpt }

func (o *awarePriors) SetFidelity(optimizers.Fidelity) error { return nil }
func (o *awarePriors) ObserveAt(id int, tun *tunables.Groups, f float64, st trial.Status, res map[string]any) ([]float64, error) {
	return o.Optimizer.Observe(id, tun, st, res)
}

package schedulers

import (
	"context"
	"errors"
	"github.com/benchtune/bench/trial"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/tunables"
)

// fakeEnv is a scriptable environment: a unit test of the scheduler's
// logic does not need real scripts (those are tested with the
// environments).
type fakeEnv struct {
	mu        sync.Mutex
	tun       *tunables.Groups
	params    environments.Params
	run       func(ctx context.Context, p environments.Params) environments.Result
	setupErr  error
	teardowns int
	runs      int
	opens     int
	closes    int
}

func (f *fakeEnv) Name() string                    { return "fake" }
func (f *fakeEnv) Class() string                   { return "fake" }
func (f *fakeEnv) Tunables() *tunables.Groups      { return f.tun }
func (f *fakeEnv) Parameters() environments.Params { return f.params }
func (f *fakeEnv) Open(ctx context.Context) error  { f.opens++; return nil }
func (f *fakeEnv) Close() error                    { f.closes++; return nil }
func (f *fakeEnv) Status(context.Context) environments.StatusReport {
	return environments.StatusReport{Status: trial.READY, Time: time.Now().UTC(),
		Telemetry: []environments.Telemetry{{Ts: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Metric: "cpu", Value: 0.5}}}
}
func (f *fakeEnv) Teardown(context.Context) error { f.teardowns++; return nil }
func (f *fakeEnv) Setup(ctx context.Context, tun *tunables.Groups, g environments.Params) error {
	if f.setupErr != nil {
		return f.setupErr
	}
	f.params = tun.Values()
	for k, v := range g {
		if k == "trial_id" || k == "repeat_i" || k == "experiment_id" || k == "trial_runner_id" {
			f.params[k] = v
		}
	}
	return nil
}
func (f *fakeEnv) Run(ctx context.Context) environments.Result {
	f.runs++
	return f.run(ctx, f.params)
}

func testTunables(t *testing.T) *tunables.Groups {
	doc, _ := source.Parse("t.jsonc", []byte(`{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 20], "default": 10}}}}`))
	g, err := tunables.ParseParams(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func score(p environments.Params) environments.Result {
	x := float64(p["x"].(int64))
	return environments.Result{Status: trial.SUCCEEDED, Time: time.Now().UTC(), Metrics: map[string]any{"score": (x - 3) * (x - 3)}}
}

func openStore(t *testing.T, path string) storage.Storage {
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type setup struct {
	env   *fakeEnv
	sched *Scheduler
	exp   storage.Experiment
}

func newSetup(t *testing.T, st storage.Storage, cfg Config, optCfg map[string]any, run func(context.Context, environments.Params) environments.Result) setup {
	t.Helper()
	env := &fakeEnv{tun: testTunables(t), run: run}
	class := "mlos_bench.optimizers.MlosCoreOptimizer"
	if optCfg == nil {
		class = "mlos_bench.optimizers.OneShotOptimizer"
		optCfg = map[string]any{}
	}
	opt, err := optimizers.New(optimizers.Spec{Class: class, Config: optCfg, Tunables: env.tun.Copy()})
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: cfg.ExperimentID, Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, []*TrialRunner{{ID: 1, Env: env}}, opt, exp, map[string]any{"experiment_id": cfg.ExperimentID}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return setup{env, s, exp}
}

func trials(t *testing.T, exp storage.Experiment) []storage.Trial {
	ts, err := exp.Trials(context.Background(), storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestRunsBudgetWithRepeats(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e1", TrialConfigRepeatCount: 3, Teardown: true},
		map[string]any{"optimizer_type": "FLAML", "max_suggestions": int64(4)}, func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	if len(ts) != 12 {
		t.Fatalf("4 suggestions x 3 repeats = 12 trials, got %d", len(ts))
	}
	for i, tr := range ts {
		if tr.Status != trial.SUCCEEDED || tr.Metadata["repeat_i"] != []string{"1", "2", "3"}[i%3] {
			t.Errorf("trial %d: %s repeat %s", tr.ID, tr.Status, tr.Metadata["repeat_i"])
		}
		if tr.Params["x"] != ts[i-i%3].Params["x"] {
			t.Errorf("repeats must run the same configuration back to back")
		}
		if tr.Metadata["optimizer"] != "MlosCoreOptimizer:FLAML" || tr.Metadata["opt_target_0"] != "score" || tr.Metadata["opt_direction_0"] != "min" {
			t.Errorf("metadata %v", tr.Metadata)
		}
	}
	if ts[0].Metadata["is_defaults"] != "True" || ts[0].Params["x"] != "10" {
		t.Errorf("first trial runs the defaults: %v %v", ts[0].Params, ts[0].Metadata)
	}
	if s.env.teardowns != 1 {
		t.Errorf("teardown ran %d times, want once at the end", s.env.teardowns)
	}
	if s.env.opens != s.env.closes {
		t.Errorf("opens %d closes %d", s.env.opens, s.env.closes)
	}
	d, err := s.exp.Trial(context.Background(), ts[0].ID)
	if err != nil || len(d.Telemetry) != 1 {
		t.Errorf("telemetry stored: %+v %v", d.Telemetry, err)
	}
}

func TestMaxTrials(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e", MaxTrials: 5}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(100)},
		func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(trials(t, s.exp)); n != 5 {
		t.Errorf("max_trials 5: ran %d", n)
	}
}

func TestFailuresAreStoredAndTheExperimentGoesOn(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	n := 0
	s := newSetup(t, st, Config{ExperimentID: "e"}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(4)},
		func(ctx context.Context, p environments.Params) environments.Result {
			n++
			switch n {
			case 1:
				return environments.Result{Status: trial.FAILED, Reason: "script exited with 3"}
			case 2:
				return environments.Result{Status: trial.SUCCEEDED, Metrics: map[string]any{"latency": 1.0}}
			case 3:
				return environments.Result{Status: trial.READY}
			}
			return score(p)
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	want := []struct {
		status trial.Status
		reason string
	}{
		{trial.FAILED, "script exited with 3"},
		{trial.FAILED, `no "score" metric`},
		{trial.FAILED, "instead of a final status"},
		{trial.SUCCEEDED, ""},
	}
	if len(ts) != len(want) {
		t.Fatalf("got %d trials", len(ts))
	}
	for i, w := range want {
		if ts[i].Status != w.status || !strings.Contains(ts[i].FailureReason, w.reason) {
			t.Errorf("trial %d: %s %q, want %s %q", ts[i].ID, ts[i].Status, ts[i].FailureReason, w.status, w.reason)
		}
	}
	if st := s.sched.Stats(); st.Failed != 3 || st.Succeeded != 1 || st.Run != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestSetupFailureAndTimeout(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e"}, nil, nil)
	s.env.setupErr = errors.New("boom")
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	if len(ts) != 1 || ts[0].Status != trial.FAILED || !strings.Contains(ts[0].FailureReason, "setup failed: boom") {
		t.Fatalf("%+v", ts)
	}
	st2 := openStore(t, filepath.Join(t.TempDir(), "db2.sqlite"))
	s2 := newSetup(t, st2, Config{ExperimentID: "e"}, nil, nil)
	s2.env.setupErr = context.DeadlineExceeded
	_ = s2.sched.Start(context.Background())
	if ts := trials(t, s2.exp); ts[0].Status != trial.TIMED_OUT {
		t.Errorf("a setup timeout is TIMED_OUT, got %s", ts[0].Status)
	}
}

func TestResumeRunsPendingAndCompletesBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	ctx := context.Background()
	// First process: runs 3 trials, then is cancelled in the 4th.
	cctx, cancel := context.WithCancel(ctx)
	st := openStore(t, path)
	runs := 0
	s := newSetup(t, st, Config{ExperimentID: "e", Teardown: true}, map[string]any{"optimizer_type": "SMAC", "max_suggestions": int64(8)},
		func(ctx context.Context, p environments.Params) environments.Result {
			runs++
			if runs == 4 {
				cancel()
				<-ctx.Done()
				return environments.Result{Status: trial.CANCELED}
			}
			return score(p)
		})
	err := s.sched.Start(cctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if s.env.teardowns != 1 {
		t.Error("teardown runs after an interruption too")
	}
	ts := trials(t, s.exp)
	if len(ts) != 4 || ts[3].Finished() {
		t.Fatalf("the interrupted trial stays unfinished: %+v", ts)
	}
	// Second process: the same experiment resumes.
	st2 := openStore(t, path)
	s2 := newSetup(t, st2, Config{ExperimentID: "e"}, map[string]any{"optimizer_type": "SMAC", "max_suggestions": int64(8)},
		func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	if err := s2.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ts = trials(t, s2.exp)
	if len(ts) != 8 {
		t.Fatalf("the budget of 8 counts the first run's trials: got %d", len(ts))
	}
	for i, tr := range ts {
		if tr.ID != i+1 || tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d: id %d %s", i, tr.ID, tr.Status)
		}
	}
	if s2.env.runs != 5 {
		t.Errorf("the resumed run should run the pending trial and 4 new ones, ran %d", s2.env.runs)
	}
	if st := s2.sched.Stats(); st.Resumed != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestOneShotResumeDoesNotRerun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	for i := 0; i < 2; i++ {
		st := openStore(t, path)
		s := newSetup(t, st, Config{ExperimentID: "e"}, nil, func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
		if err := s.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(trials(t, s.exp)); n != 1 {
			t.Fatalf("round %d: %d trials", i, n)
		}
		if _, ok := s.sched.Optimizer().Best(); !ok {
			t.Errorf("round %d: the stored result is fed back", i)
		}
	}
}

// countingExp counts the storage calls that end trials, and can fail them.
type countingExp struct {
	storage.Experiment
	finishes, merged, newTrials int
	failMerged, failNewTrial    int // fail the n-th call (1-based; 0: never)
}

func (c *countingExp) Finish(ctx context.Context, id int, out storage.TrialOutcome) error {
	c.finishes++
	return c.Experiment.Finish(ctx, id, out)
}

func (c *countingExp) FinishAndQueue(ctx context.Context, id int, out storage.TrialOutcome, next storage.TrialSpec) (storage.Trial, error) {
	c.merged++
	if c.merged == c.failMerged {
		return storage.Trial{}, errors.New("injected failure of FinishAndQueue")
	}
	return c.Experiment.FinishAndQueue(ctx, id, out, next)
}

func (c *countingExp) NewTrial(ctx context.Context, spec storage.TrialSpec) (storage.Trial, error) {
	c.newTrials++
	if c.newTrials == c.failNewTrial {
		return storage.Trial{}, errors.New("injected failure of NewTrial")
	}
	return c.Experiment.NewTrial(ctx, spec)
}

// slowOptimizer takes its time to suggest.
type slowOptimizer struct {
	optimizers.Optimizer
	delay time.Duration
}

func (s slowOptimizer) Suggest(ctx context.Context) (*tunables.Groups, error) {
	time.Sleep(s.delay)
	return s.Optimizer.Suggest(ctx)
}

// storedObserver checks that a trial is stored as finished when the
// observer hears of it.
type storedObserver struct {
	t   *testing.T
	exp storage.Experiment
	n   int
}

func (o *storedObserver) TrialStarted(storage.Trial) {}
func (o *storedObserver) TrialFinished(tr storage.Trial, _ storage.TrialOutcome, _ []float64) {
	o.n++
	d, err := o.exp.Trial(context.Background(), tr.ID)
	if err != nil || !d.Finished() {
		o.t.Errorf("trial %d reported finished before it was stored (%s, %v)", tr.ID, d.Status, err)
	}
}

// TestOneCommitPerTrial: a trial's outcome is stored in the transaction
// that queues the next trial; with a slow optimizer, or when that
// transaction fails, it is stored on its own; every outcome is stored in
// the end and the observer hears of it only once it is.
func TestOneCommitPerTrial(t *testing.T) {
	run := func(t *testing.T, exp *countingExp, delay time.Duration) (*Scheduler, error) {
		env := &fakeEnv{tun: testTunables(t), run: func(ctx context.Context, p environments.Params) environments.Result { return score(p) }}
		opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
			Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(5)}, Tunables: env.tun.Copy()})
		if err != nil {
			t.Fatal(err)
		}
		if delay > 0 {
			opt = slowOptimizer{opt, delay}
		}
		obs := &storedObserver{t: t, exp: exp.Experiment}
		s, err := New(Config{ExperimentID: "e"}, []*TrialRunner{{ID: 1, Env: env}}, opt, exp, map[string]any{}, Options{Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Start(context.Background())
		if want := len(trials(t, exp.Experiment)); obs.n != want {
			t.Errorf("observer heard of %d finished trials, %d are stored", obs.n, want)
		}
		return s, err
	}
	newExp := func(t *testing.T) *countingExp {
		st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
		exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
		if err != nil {
			t.Fatal(err)
		}
		return &countingExp{Experiment: exp}
	}
	allSucceeded := func(t *testing.T, exp storage.Experiment, want int) {
		t.Helper()
		ts := trials(t, exp)
		if len(ts) != want {
			t.Fatalf("%d trials stored, want %d", len(ts), want)
		}
		for _, tr := range ts {
			if tr.Status != trial.SUCCEEDED {
				t.Errorf("trial %d: %s", tr.ID, tr.Status)
			}
		}
	}

	t.Run("fast optimizer", func(t *testing.T) {
		exp := newExp(t)
		if _, err := run(t, exp, 0); err != nil {
			t.Fatal(err)
		}
		allSucceeded(t, exp, 5)
		// The first trial is queued on its own, the next four with the
		// outcome of the one before, and the last outcome is stored alone.
		if exp.newTrials != 1 || exp.merged != 4 || exp.finishes != 1 {
			t.Errorf("NewTrial %d, FinishAndQueue %d, Finish %d: want 1, 4, 1", exp.newTrials, exp.merged, exp.finishes)
		}
	})
	t.Run("slow optimizer", func(t *testing.T) {
		exp := newExp(t)
		if _, err := run(t, exp, 2*holdLimit); err != nil {
			t.Fatal(err)
		}
		allSucceeded(t, exp, 5)
		// The first suggestion was slow already: every outcome is stored
		// as soon as its trial ends.
		if exp.finishes != 5 || exp.merged != 0 {
			t.Errorf("Finish %d, FinishAndQueue %d: want 5, 0", exp.finishes, exp.merged)
		}
	})
	t.Run("merged transaction fails", func(t *testing.T) {
		exp := newExp(t)
		exp.failMerged = 2
		if _, err := run(t, exp, 0); err != nil {
			t.Fatal(err)
		}
		allSucceeded(t, exp, 5)
	})
	t.Run("queuing fails", func(t *testing.T) {
		exp := newExp(t)
		exp.failMerged, exp.failNewTrial = 2, 2
		if _, err := run(t, exp, 0); err == nil || !strings.Contains(err.Error(), "injected failure of NewTrial") {
			t.Fatalf("Start: %v, want the NewTrial failure", err)
		}
		// The outcome of the trial before is stored all the same.
		allSucceeded(t, exp, 2)
	})
}

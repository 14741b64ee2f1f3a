package schedulers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"

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

func testTunables(t testing.TB) *tunables.Groups {
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

func openStore(t *testing.T, path string) storage.Storage { return openStoreOn(t, path, nil) }

// openStoreOn opens a store whose leases are on the scheduler's clock c
// (nil: the database's own).
func openStoreOn(t *testing.T, path string, c Clock) storage.Storage {
	cfg := storage.Config{DriverName: "sqlite", Database: path}
	if c != nil {
		cfg.Clock = c.Now
	}
	st, err := storage.Open(context.Background(), cfg)
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
	if cfg.NumTrialRunners == 0 {
		cfg.NumTrialRunners = 1
	}
	s, err := New(cfg, []Runner{NewLocalRunner(1, env)}, opt, exp, Options{Globals: map[string]any{"experiment_id": cfg.ExperimentID}, Tunables: env.tun, Tick: 20 * time.Millisecond})
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
	var ran []string // trial ids in the order they ran (one runner)
	s := newSetup(t, st, Config{ExperimentID: "e1", TrialConfigRepeatCount: 3, Teardown: true},
		map[string]any{"optimizer_type": "FLAML", "max_suggestions": int64(4)}, func(ctx context.Context, p environments.Params) environments.Result {
			ran = append(ran, fmt.Sprint(p["trial_id"]))
			return score(p)
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	if len(ts) != 12 {
		t.Fatalf("4 suggestions x 3 repeats = 12 trials, got %d", len(ts))
	}
	// As in mlos_bench: trials run in the order of their ids, repeat 1 of a
	// configuration first.
	if want := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}; !slices.Equal(ran, want) {
		t.Errorf("trials ran in the order %v, want %v", ran, want)
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
		{trial.READY, ""}, // as in mlos_bench: kept READY, unfinished (TestRunEndingReady)
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
	if st := s.sched.Stats(); st.Failed != 2 || st.Succeeded != 1 || st.Run != 4 || st.Remaining != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestRunEndingReady: a run that ends READY (a NetworkEnv or SaaSEnv alone)
// is no result, as in mlos_bench: the trial is stored READY with its
// status history, no end time and no results, the optimizer never sees
// it, it counts against max_trials, the experiment goes on, and a resume
// runs it again.
func TestRunEndingReady(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	ctx := context.Background()
	s := newSetup(t, openStore(t, path), Config{ExperimentID: "e", MaxTrials: 2}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(10)},
		func(ctx context.Context, p environments.Params) environments.Result {
			return environments.Result{Status: trial.READY, Metrics: map[string]any{"score": 1.0}}
		})
	if err := s.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, s.exp)
	if len(ts) != 2 {
		t.Fatalf("max_trials 2: %d trials", len(ts))
	}
	for _, tr := range ts {
		if tr.Status != trial.READY || tr.Finished() || len(tr.Results) != 0 || tr.FailureReason != "" {
			t.Errorf("trial %d: %s finished %v results %v reason %q", tr.ID, tr.Status, tr.Finished(), tr.Results, tr.FailureReason)
		}
	}
	if d, err := s.exp.Trial(ctx, 1); err != nil || len(d.History) == 0 || d.History[len(d.History)-1].Status != trial.READY {
		t.Errorf("status history %+v, %v", d.History, err)
	}
	if c, err := s.exp.CompletedTrials(ctx, 0); err != nil || len(c) != 0 {
		t.Errorf("completed trials (what an optimizer is given) %d, %v", len(c), err)
	}
	if st := s.sched.Stats(); st.Run != 2 || st.Failed != 0 || st.Succeeded != 0 || st.Remaining != 2 {
		t.Errorf("stats %+v", st)
	}
	// A resume runs them again; now they succeed.
	s2 := newSetup(t, openStore(t, path), Config{ExperimentID: "e", MaxTrials: 2}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(10)},
		func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	if err := s2.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ts = trials(t, s2.exp)
	if len(ts) != 2 || ts[0].Status != trial.SUCCEEDED || ts[1].Status != trial.SUCCEEDED || s2.env.runs != 2 {
		t.Errorf("after the resume: %+v, %d runs", ts, s2.env.runs)
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

// A configuration that no suggestion stored (a confirmation phase's run of
// the default, whose trials are repeats past trial_config_repeat_count)
// does not use up max_suggestions on resume: storage's budget of
// configurations (TrialSpec.MaxConfigs) leaves room for it, so the
// resumed run still makes its max_suggestions − 4 suggestions.
func TestResumeBudgetLeavesRoomForUnsuggestedConfigs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	ctx := context.Background()
	opt := func(n int64) map[string]any { return map[string]any{"optimizer_type": "FLAML", "max_suggestions": n} }
	run := func(ctx context.Context, p environments.Params) environments.Result { return score(p) }
	s := newSetup(t, openStore(t, path), Config{ExperimentID: "e"}, opt(4), run)
	if err := s.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, tr := range trials(t, s.exp) {
		held[tr.Params["x"]] = true
	}
	// A confirmation-like trial of a configuration no suggestion stored.
	tun := testTunables(t)
	x := 0
	for held[fmt.Sprint(x)] {
		x++
	}
	if err := tun.Assign(map[string]any{"x": int64(x)}); err != nil {
		t.Fatal(err)
	}
	extra, err := s.exp.NewTrial(ctx, storage.TrialSpec{ConfigHash: tun.Hash(), Params: tun.StringValues(), Metadata: map[string]string{"repeat_i": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.exp.Finish(ctx, extra.ID, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 50.0}}); err != nil {
		t.Fatal(err)
	}
	s2 := newSetup(t, openStore(t, path), Config{ExperimentID: "e"}, opt(6), run)
	if err := s2.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	suggested := 0
	for _, tr := range trials(t, s2.exp) {
		if tr.RetryOf == 0 && tr.Metadata["repeat_i"] == "1" {
			suggested++
		}
	}
	if suggested != 6 {
		t.Errorf("%d suggestions stored over both runs, want max_suggestions 6", suggested)
	}
}

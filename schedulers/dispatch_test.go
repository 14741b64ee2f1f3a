package schedulers

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
	local "github.com/benchtune/bench/services/local"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// parEnv is a thread-safe scriptable environment for parallel tests; every
// runner gets its own, sharing one run function.
type parEnv struct {
	fakeEnv
	id int
}

func (p *parEnv) Setup(ctx context.Context, tun *tunables.Groups, g environments.Params) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.params = tun.Values()
	for k, v := range g {
		p.params[k] = v
	}
	return nil
}

func (p *parEnv) Run(ctx context.Context) environments.Result {
	p.mu.Lock()
	params := p.params
	p.runs++
	p.mu.Unlock()
	return p.run(ctx, params)
}

func (p *parEnv) Open(ctx context.Context) error { return nil }
func (p *parEnv) Close() error                   { return nil }
func (p *parEnv) Teardown(context.Context) error {
	p.mu.Lock()
	p.teardowns++
	p.mu.Unlock()
	return nil
}

type parSetup struct {
	sched *Scheduler
	exp   storage.Experiment
	st    storage.Storage
}

// newPar builds a scheduler with n runners over one run function.
func newPar(t *testing.T, path string, cfg Config, n int, optClass string, optCfg map[string]any, o Options,
	run func(context.Context, environments.Params) environments.Result) parSetup {
	t.Helper()
	st := openStoreOn(t, path, o.Clock)
	tun := testTunables(t)
	var runners []Runner
	for i := 1; i <= n; i++ {
		env := &parEnv{fakeEnv: fakeEnv{tun: tun.Copy(), run: run}, id: i}
		runners = append(runners, NewLocalRunner(i, env))
	}
	if optClass == "" {
		optClass = "mlos_bench.optimizers.MlosCoreOptimizer"
	}
	opt, err := optimizers.New(optimizers.Spec{Class: optClass, Config: optCfg, Tunables: tun.Copy()})
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: cfg.ExperimentID, Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NumTrialRunners == 0 {
		cfg.NumTrialRunners = n
	}
	o.Tunables = tun
	if o.Tick == 0 {
		o.Tick = 20 * time.Millisecond
	}
	s, err := New(cfg, runners, opt, exp, o)
	if err != nil {
		t.Fatal(err)
	}
	return parSetup{s, exp, st}
}

// gauge tracks the largest number of trials running at once.
type gauge struct{ cur, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}
func (g *gauge) leave() { g.cur.Add(-1) }

func TestParallelRunsUpToNTrialsAtOnce(t *testing.T) {
	var g gauge
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 4, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(12)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			g.enter()
			defer g.leave()
			time.Sleep(80 * time.Millisecond)
			return score(params)
		})
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 12 {
		t.Fatalf("%d trials, want 12", len(ts))
	}
	runnerIDs := map[int]bool{}
	configs := map[string]bool{}
	for _, tr := range ts {
		if tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d: %s %s", tr.ID, tr.Status, tr.FailureReason)
		}
		runnerIDs[tr.TrialRunnerID] = true
		configs[tr.ConfigHash] = true
	}
	if g.peak.Load() != 4 {
		t.Errorf("at most %d trials ran at once, want 4", g.peak.Load())
	}
	if len(runnerIDs) != 4 {
		t.Errorf("trials ran on runners %v, want all 4", runnerIDs)
	}
	if len(configs) != 12 {
		t.Errorf("%d distinct configurations for 12 suggestions: pending ones were suggested again", len(configs))
	}
	if st := p.sched.Stats(); st.Run != 12 || st.Succeeded != 12 {
		t.Errorf("stats %+v", st)
	}
}

func TestSyncSchedulerRunsOneAtATimeRoundRobin(t *testing.T) {
	var g gauge
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: false}, 3, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(6)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			g.enter()
			defer g.leave()
			time.Sleep(10 * time.Millisecond)
			return score(params)
		})
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.peak.Load() != 1 {
		t.Errorf("SyncScheduler ran %d trials at once", g.peak.Load())
	}
	for i, tr := range trials(t, p.exp) {
		if want := i%3 + 1; tr.TrialRunnerID != want {
			t.Errorf("trial %d ran on runner %d, want %d (round robin)", tr.ID, tr.TrialRunnerID, want)
		}
	}
}

func TestRetriesOnAnotherRunner(t *testing.T) {
	var mu sync.Mutex
	attempts := map[any]int{}
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, MaxRetries: 2}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(4)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			mu.Lock()
			attempts[params["x"]]++
			n := attempts[params["x"]]
			mu.Unlock()
			if n == 1 {
				return environments.Result{Status: trial.FAILED, Reason: fmt.Sprintf("flaky %v", params["x"])}
			}
			return score(params)
		})
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 8 {
		t.Fatalf("%d trials, want 4 failed first attempts and 4 retries", len(ts))
	}
	byID := map[int]storage.Trial{}
	for _, tr := range ts {
		byID[tr.ID] = tr
	}
	retries := 0
	for _, tr := range ts {
		if tr.RetryOf == 0 {
			if tr.Status != trial.FAILED {
				t.Errorf("first attempt %d: %s", tr.ID, tr.Status)
			}
			continue
		}
		retries++
		orig := byID[tr.RetryOf]
		if tr.Status != trial.SUCCEEDED || orig.ConfigHash != tr.ConfigHash || orig.Metadata["repeat_i"] != tr.Metadata["repeat_i"] {
			t.Errorf("retry %d of %d: %s, config %s vs %s", tr.ID, tr.RetryOf, tr.Status, tr.ConfigHash, orig.ConfigHash)
		}
		if tr.TrialRunnerID == orig.TrialRunnerID {
			t.Errorf("retry %d ran on runner %d like its original", tr.ID, tr.TrialRunnerID)
		}
	}
	if retries != 4 {
		t.Errorf("%d retries", retries)
	}
	if st := p.sched.Stats(); st.Retried != 4 || st.Succeeded != 4 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
	if _, ok := p.sched.Optimizer().Best(); !ok {
		t.Error("the optimizer saw the retries' results")
	}
}

func TestFailureBudgetStopsTheExperiment(t *testing.T) {
	n := atomic.Int64{}
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, MaxFailedTrials: 3, FailFast: 3}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			i := n.Add(1)
			if i%2 == 0 {
				return score(params)
			}
			// Each failure differs, so fail-fast does not apply.
			return environments.Result{Status: trial.FAILED, Reason: []string{"disk full", "oom", "segfault", "bad config"}[(i/2)%4]}
		})
	err := p.sched.Start(context.Background())
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "max_failed_trials 3") {
		t.Fatalf("want the failure budget error, got %v", err)
	}
	failed := 0
	for _, tr := range trials(t, p.exp) {
		if tr.Status == trial.FAILED {
			failed++
		}
		if !tr.Finished() {
			t.Errorf("trial %d left unfinished", tr.ID)
		}
	}
	if failed != 3 {
		t.Errorf("%d failed trials stored, want 3", failed)
	}
}

func TestFailFast(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result environments.Result
		want   string
	}{
		{"script not found", environments.Result{Status: trial.FAILED, Reason: "run failed: line 1 exited with 127: sh: 1: ./bench.sh: not found"}, "not found"},
		{"target missing", environments.Result{Status: trial.SUCCEEDED, Metrics: map[string]any{"latency": 1.0}}, `no "score" metric`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, FailFast: 3}, 1, "",
				map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(50)}, Options{},
				func(ctx context.Context, params environments.Params) environments.Result { return tc.result })
			err := p.sched.Start(context.Background())
			if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "first 3 trials all failed the same way") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a fail-fast error naming %q, got %v", tc.want, err)
			}
			if n := len(trials(t, p.exp)); n != 3 {
				t.Errorf("%d trials ran, want 3", n)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, FailFast: 0}, 1, "",
			map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(5)}, Options{},
			func(ctx context.Context, params environments.Params) environments.Result {
				return environments.Result{Status: trial.FAILED, Reason: "same"}
			})
		if err := p.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(trials(t, p.exp)); n != 5 {
			t.Errorf("%d trials ran, want all 5", n)
		}
	})
}

func TestStopRequests(t *testing.T) {
	ctx := context.Background()
	started := make(chan int, 10)
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(3)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			id := params["trial_id"].(int64)
			started <- int(id)
			if id == 1 {
				<-ctx.Done() // hangs until stopped
				return environments.Result{Status: trial.CANCELED}
			}
			return score(params)
		})
	go func() {
		<-started
		// Another process (bench stop) asks to stop trial 1.
		if err := p.exp.RequestStop(ctx, 1); err != nil {
			t.Error(err)
		}
	}()
	if err := p.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 3 || ts[0].Status != trial.CANCELED || !strings.Contains(ts[0].FailureReason, "bench stop") {
		t.Fatalf("trial 1 is stored CANCELED and the experiment goes on: %+v", ts)
	}
	if ts[1].Status != trial.SUCCEEDED || ts[2].Status != trial.SUCCEEDED {
		t.Errorf("later trials: %s %s", ts[1].Status, ts[2].Status)
	}

	// Stopping the whole experiment ends the run.
	p2 := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e2", Parallel: true}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(50)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			<-ctx.Done()
			return environments.Result{Status: trial.CANCELED}
		})
	go func() {
		time.Sleep(100 * time.Millisecond)
		if err := p2.exp.RequestStop(ctx, 0); err != nil {
			t.Error(err)
		}
	}()
	err := p2.sched.Start(ctx)
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "on request") {
		t.Fatalf("want a stop-on-request error, got %v", err)
	}
	for _, tr := range trials(t, p2.exp) {
		if tr.Status != trial.CANCELED {
			t.Errorf("trial %d: %s, want CANCELED", tr.ID, tr.Status)
		}
	}
}

func TestDedupReusesSucceededTrials(t *testing.T) {
	cycle := map[string]any{"tunable_values_cycle": []any{map[string]any{"x": int64(1)}, map[string]any{"x": int64(2)}}, "max_cycles": int64(3)}
	runs := atomic.Int64{}
	run := func(ctx context.Context, params environments.Params) environments.Result {
		runs.Add(1)
		if params["x"] == int64(2) && runs.Load() <= 2 {
			return environments.Result{Status: trial.FAILED, Reason: "fails once"}
		}
		return score(params)
	}
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Reuse: true}, 1, "mlos_bench.optimizers.ManualOptimizer", cycle, Options{}, run)
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 6 {
		t.Fatalf("%d trials, want 6", len(ts))
	}
	// x=1 ran once and was reused twice; x=2 failed, ran again (a failed
	// trial is not reused), then was reused.
	if runs.Load() != 3 {
		t.Errorf("%d trials ran, want 3", runs.Load())
	}
	reused := 0
	for _, tr := range ts {
		if tr.ReusedFrom != nil {
			reused++
			src := ts[tr.ReusedFrom.TrialID-1]
			if tr.Status != trial.SUCCEEDED || src.ConfigHash != tr.ConfigHash || src.Status != trial.SUCCEEDED || tr.ReusedFrom.ExperimentID != "e" {
				t.Errorf("trial %d reuses %+v: %s", tr.ID, tr.ReusedFrom, tr.Status)
			}
			if fmt.Sprint(tr.Results["score"]) != fmt.Sprint(src.Results["score"]) {
				t.Errorf("trial %d: reused score %v, source %v", tr.ID, tr.Results["score"], src.Results["score"])
			}
		}
	}
	if reused != 3 || p.sched.Stats().Reused != 3 {
		t.Errorf("%d reused trials (stats %+v), want 3", reused, p.sched.Stats())
	}

	// --no-reuse runs every trial.
	runs.Store(100)
	p2 := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Reuse: false}, 1, "mlos_bench.optimizers.ManualOptimizer", cycle, Options{}, run)
	if err := p2.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 106 {
		t.Errorf("without reuse %d trials ran, want 6", runs.Load()-100)
	}
}

func TestHangDetectionKillsTheTrialsProcesses(t *testing.T) {
	exe, err := local.NewLocalExec(local.DefaultConfig(), local.Options{KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("hang-marker-%d", time.Now().UnixNano())
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, IdleTimeout: 300 * time.Millisecond}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(2)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			if params["trial_id"].(int64) == 1 {
				// Prints for a while (not idle), then hangs with a child
				// in the background.
				_, err := exe.LocalExec(ctx, services.ExecRequest{Lines: []string{
					"for i in 1 2 3 4 5; do echo tick; sleep 0.1; done; (exec -a " + marker + " sleep 60) & sleep 60"}})
				return environments.Result{Status: trial.FAILED, Reason: fmt.Sprint(err)}
			}
			return score(params)
		})
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 2 || ts[0].Status != trial.TIMED_OUT || !strings.Contains(ts[0].FailureReason, "no output and no telemetry") {
		t.Fatalf("the hung trial is TIMED_OUT and the experiment goes on: %+v", ts)
	}
	if d := ts[0].TsEnd.Sub(ts[0].TsStart); d < 700*time.Millisecond {
		t.Errorf("the trial printed for 0.5s, then hung for 0.3s: stopped after %s", d)
	}
	if ts[1].Status != trial.SUCCEEDED {
		t.Errorf("trial 2: %s", ts[1].Status)
	}
	if out, err := exec.Command("pgrep", "-f", marker).Output(); err == nil {
		t.Errorf("orphan processes left: %s", out)
	}
}

func TestDeviceSlotsBoundConcurrencyAndReachOnlyTheTrial(t *testing.T) {
	var g gauge
	pool, err := devices.NewPool(devices.Config{GPUs: []string{"0", "3"}, GPUsPerTrial: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 4, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(8)}, Options{Devices: pool},
		func(ctx context.Context, params environments.Params) environments.Result {
			g.enter()
			defer g.leave()
			env := services.ProcessEnvFrom(ctx)
			mu.Lock()
			seen[env["CUDA_VISIBLE_DEVICES"]+"/"+fmt.Sprint(params["gpu_id"])]++
			mu.Unlock()
			time.Sleep(40 * time.Millisecond)
			return score(params)
		})
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.peak.Load() != 2 {
		t.Errorf("%d trials ran at once with 2 GPU slots", g.peak.Load())
	}
	if seen["0/0"]+seen["3/3"] != 8 || seen["0/0"] == 0 || seen["3/3"] == 0 {
		t.Errorf("devices seen by trials (CUDA_VISIBLE_DEVICES/$gpu_id): %v", seen)
	}
}

// TestObserverHearsOnlyStoredTrials: a trial is reported finished only
// once its outcome is stored, with the experiment's best so far.
func TestObserverHearsOnlyStoredTrials(t *testing.T) {
	obs := &storedObserver{t: t}
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(6)}, Options{Observer: obs},
		func(ctx context.Context, params environments.Params) environments.Result { return score(params) })
	obs.exp = p.exp
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if obs.n != 6 {
		t.Errorf("observer heard of %d trials", obs.n)
	}
	best, scores, ok := storage.Best(trials(t, p.exp), trial.Objectives{{Name: "score"}})
	if !ok || obs.best == nil || obs.best.TrialID != best.ID || obs.best.Values[0] != scores[0] {
		t.Errorf("observer's best %+v, the experiment's %d %v", obs.best, best.ID, scores)
	}
}

type storedObserver struct {
	t    *testing.T
	exp  storage.Experiment
	n    int
	best *Best
}

func (o *storedObserver) TrialStarted(storage.Trial) {}
func (o *storedObserver) TrialFinished(tr storage.Trial, _ trial.Outcome, best *Best) {
	o.n++
	o.best = best
	d, err := o.exp.Trial(context.Background(), tr.ID)
	if err != nil || !d.Finished() {
		o.t.Errorf("trial %d reported finished before it was stored (%s, %v)", tr.ID, d.Status, err)
	}
}

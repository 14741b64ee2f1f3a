package schedulers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// The lease on a running trial is renewed well before it runs out: see
// TestHeartbeatRenewsLeasesOnTheClock (clock_test.go), on a fake clock.

// A stop request (bench stop) for a trial that another process runs is
// that process's to act on: this process does not cancel it in storage
// under that owner.
func TestStopOfAnotherOwnersTrialIsNotCancelledHere(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := context.Background()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	// A trial another live process (of another host) holds and runs.
	owner := "otherhost:1:beef"
	if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "7"}, Metadata: map[string]string{"repeat_i": "1"}}); err != nil {
		t.Fatal(err)
	}
	held, err := exp.WithOwner(owner, time.Hour).Claim(ctx, 1)
	if err != nil || len(held) != 1 {
		t.Fatalf("claim: %v %v", held, err)
	}
	if err := exp.WithOwner(owner, time.Hour).UpdateStatus(ctx, held[0].ID, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := exp.RequestStop(ctx, held[0].ID); err != nil {
		t.Fatal(err)
	}
	// This process runs its own trials meanwhile, long enough to read the
	// stop requests more than once.
	s := newSetup(t, st, Config{ExperimentID: "e"}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(3)},
		func(ctx context.Context, p environments.Params) environments.Result {
			time.Sleep(400 * time.Millisecond)
			return score(p)
		})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Second+3*400*time.Millisecond)
	defer cancel()
	_ = s.sched.Start(runCtx) // it may wait for the other process's trial until runCtx ends
	got, err := exp.Trial(ctx, held[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Finished() || got.Status == trial.CANCELED {
		t.Errorf("the other process's trial was finished here: %s %q", got.Status, got.FailureReason)
	}
	if got.Owner != owner {
		t.Errorf("the other process's trial is now held by %q", got.Owner)
	}
}

// failingRun returns a run function whose first len(reasons) runs fail
// with those reasons, in order, and whose later runs succeed.
func failingRun(reasons ...string) func(context.Context, environments.Params) environments.Result {
	var n atomic.Int64
	return func(ctx context.Context, p environments.Params) environments.Result {
		if i := int(n.Add(1)); i <= len(reasons) {
			return environments.Result{Status: trial.FAILED, Reason: reasons[i-1]}
		}
		return score(p)
	}
}

// Fail-fast stops only when all of the first N failures are the same: one
// that differs, wherever it is among them, lets the experiment go on.
func TestFailFastComparesAllOfTheFirstFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reasons []string
		stop    bool
	}{
		{"all the same", []string{"disk full on /dev/sda1", "disk full on /dev/sda2", "disk full on /dev/sda3"}, true},
		{"the last differs", []string{"disk full", "disk full", "segfault"}, false},
		{"the second differs", []string{"disk full", "segfault", "disk full"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			s := newSetup(t, st, Config{ExperimentID: "e", FailFast: 3}, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(6)},
				failingRun(tc.reasons...))
			err := s.sched.Start(context.Background())
			if stopped := errors.Is(err, ErrStopped); stopped != tc.stop {
				t.Errorf("stopped = %v (%v), want %v", stopped, err, tc.stop)
			}
			if n := len(trials(t, s.exp)); !tc.stop && n != 6 {
				t.Errorf("%d trials ran, want all 6", n)
			}
		})
	}
}

// A resume counts toward max_failed_trials only the failures that no
// retry fixed.
func TestResumeDoesNotCountFailuresARetryFixed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	st := openStore(t, path)
	cfg := Config{ExperimentID: "e", MaxRetries: 1, MaxFailedTrials: 2}
	// First run: two configurations fail once each and their retries
	// succeed.
	var n atomic.Int64
	s := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(2)},
		func(ctx context.Context, p environments.Params) environments.Result {
			if n.Add(1)%2 == 1 { // each first attempt fails, each retry succeeds
				return environments.Result{Status: trial.FAILED, Reason: "flaky"}
			}
			return score(p)
		})
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatalf("first run: %v", err)
	}
	ts := trials(t, s.exp)
	retried := 0
	for _, tr := range ts {
		if tr.RetryOf != 0 && tr.Status == trial.SUCCEEDED {
			retried++
		}
	}
	if retried != 2 {
		t.Fatalf("the test is broken: no failure was fixed by a retry: %+v", ts)
	}
	// The resumed run: two failures are stored, none counts; one new
	// failure does not spend the budget of two.
	cfg.MaxRetries = 0
	s2 := newSetup(t, st, cfg, map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(4)}, failingRun("new failure"))
	if err := s2.sched.Start(context.Background()); err != nil {
		t.Errorf("resume: %v (failures fixed by retries were counted)", err)
	}
}

// A resumed experiment knows which configuration and repeat it already
// ran: a configuration and repeat that succeeded is reused (found before
// any attempt to store a duplicate), and repeat 2 of that configuration
// still runs.
func TestResumeDedupKeyHasTheRepeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	st := openStore(t, path)
	cycle := func(n int64) map[string]any {
		return map[string]any{"tunable_values_cycle": []any{map[string]any{"x": int64(4)}}, "max_cycles": n}
	}
	var runs atomic.Int64
	run := func(ctx context.Context, p environments.Params) environments.Result { runs.Add(1); return score(p) }
	first := newManual(t, st, Config{ExperimentID: "e", Reuse: true, TrialConfigRepeatCount: 1}, cycle(1), run, nil)
	if err := first.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	// The resumed run skips the suggestion already made and gets x=4
	// again, now with two repeats.
	second := newManual(t, st, Config{ExperimentID: "e", Reuse: true, TrialConfigRepeatCount: 2}, cycle(2), run, &log)
	if err := second.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := trials(t, second.exp)
	byRepeat := map[string][]storage.Trial{}
	for _, tr := range ts {
		byRepeat[tr.Metadata["repeat_i"]] = append(byRepeat[tr.Metadata["repeat_i"]], tr)
	}
	if runs.Load() != 2 {
		t.Errorf("%d runs, want 2 (repeat 1 once, repeat 2 once)", runs.Load())
	}
	if len(byRepeat["1"]) != 2 || byRepeat["1"][1].ReusedFrom == nil {
		t.Errorf("repeat 1 of the configuration did not reuse the stored success: %+v", byRepeat["1"])
	}
	if len(byRepeat["2"]) != 1 || byRepeat["2"][0].ReusedFrom != nil {
		t.Errorf("repeat 2 of the configuration did not run: %+v", byRepeat["2"])
	}
	if strings.Contains(log.String(), "in flight or done") {
		t.Errorf("the resumed run did not know the stored configuration and repeat:\n%s", log.String())
	}
}

// newManual is newSetup with the ManualOptimizer and an optional log.
func newManual(t *testing.T, st storage.Storage, cfg Config, optCfg map[string]any, run func(context.Context, environments.Params) environments.Result, log *bytes.Buffer) setup {
	t.Helper()
	env := &fakeEnv{tun: testTunables(t), run: run}
	opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.ManualOptimizer", Config: optCfg, Tunables: env.tun.Copy()})
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: cfg.ExperimentID, Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumTrialRunners = 1
	o := Options{Globals: map[string]any{"experiment_id": cfg.ExperimentID}, Tunables: env.tun, Tick: 20 * time.Millisecond}
	if log != nil {
		o.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := New(cfg, []Runner{NewLocalRunner(1, env)}, opt, exp, o)
	if err != nil {
		t.Fatal(err)
	}
	return setup{env, s, exp}
}

// A max_trials that is not a multiple of the repeat count is reached
// exactly: the last configuration runs fewer repeats.
func TestMaxTrialsNotAMultipleOfRepeats(t *testing.T) {
	for _, tc := range []struct{ maxTrials, repeats int }{{5, 2}, {7, 3}, {1, 2}} {
		t.Run(fmt.Sprintf("%d_of_%d", tc.maxTrials, tc.repeats), func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			s := newSetup(t, st, Config{ExperimentID: "e", MaxTrials: tc.maxTrials, TrialConfigRepeatCount: tc.repeats},
				map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(100)},
				func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
			if err := s.sched.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := len(trials(t, s.exp)); n != tc.maxTrials {
				t.Errorf("%d trials, want max_trials %d", n, tc.maxTrials)
			}
			if p := s.sched.Stats().Planned; p != tc.maxTrials {
				t.Errorf("planned %d, want %d", p, tc.maxTrials)
			}
		})
	}
}

// OwnerDead says "dead" only for a process of this host that is gone: a
// process of another host, or a pid that runs now (as after a reboot,
// when the pid names another process), is not taken for dead.
func TestOwnerDeadOnlyForThisHostsGoneProcess(t *testing.T) {
	host, _ := os.Hostname()
	gone := deadPID(t)
	for _, tc := range []struct {
		owner string
		dead  bool
	}{
		{fmt.Sprintf("%s:%d:abcd", host, gone), true},
		{fmt.Sprintf("not-%s:%d:abcd", host, gone), false},     // another host
		{fmt.Sprintf("%s:%d:abcd", host, os.Getppid()), false}, // a pid that runs (another boot's owner)
		{fmt.Sprintf("%s:%d:abcd", host, os.Getpid()), false},  // this process
		{fmt.Sprintf("%s.example:%d:abcd", host, gone), false}, // a host with a longer name
		{"garbage", false},
	} {
		if got := OwnerDead(tc.owner); got != tc.dead {
			t.Errorf("OwnerDead(%q) = %v, want %v", tc.owner, got, tc.dead)
		}
	}
}

// deadPID returns the pid of a process that ran and ended.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// One tie rule for "best" everywhere: when trials score the same, the
// progress display's best (the observer's) and storage's Best are both the
// lowest trial id, whichever trial finished first.
func TestBestTieIsTheLowestTrialID(t *testing.T) {
	obs := &storedObserver{t: t}
	var n atomic.Int64
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(4)}, Options{Observer: obs},
		func(ctx context.Context, params environments.Params) environments.Result {
			n.Add(1)
			if id, _ := params["trial_id"].(int64); id%2 == 1 {
				time.Sleep(150 * time.Millisecond) // the other runner's later trial finishes first
			}
			return environments.Result{Status: trial.SUCCEEDED, Time: time.Now().UTC(), Metrics: map[string]any{"score": 1.0}}
		})
	obs.exp = p.exp
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	best, _, ok := storage.Best(trials(t, p.exp), trial.Objectives{{Name: "score"}})
	if !ok || best.ID != 1 {
		t.Errorf("storage's best is trial %d, want 1 (all tie)", best.ID)
	}
	if obs.best == nil || obs.best.TrialID != 1 {
		t.Errorf("the progress display's best is %+v, want trial 1 (all tie)", obs.best)
	}
}

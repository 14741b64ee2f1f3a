package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/local"
	"github.com/benchtune/bench/tunables"
)

// lines counts the lines of a marker file (0 when missing).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// withValues returns a copy of the fixture's tunables with values set.
func withValues(t *testing.T, f *envtest.Fixture, values map[string]any) *tunables.Groups {
	t.Helper()
	tun := f.Tunables.Copy()
	if err := tun.Assign(values); err != nil {
		t.Fatal(err)
	}
	return tun
}

// reuseTrial runs one trial (open, setup, run, close) and returns the
// setup error or the run's result.
func reuseTrial(t *testing.T, env environments.Environment, tun *tunables.Groups, globals environments.Params) (environments.Result, error) {
	t.Helper()
	ctx := context.Background()
	if err := env.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := env.Setup(ctx, tun, globals); err != nil {
		return environments.Result{}, err
	}
	return env.Run(ctx), nil
}

// reuseEnv is a LocalEnv bound to the "boot" group (tunable idle) whose
// setup appends a line to a marker file (and fails while the file
// "fail" exists in the config folder) and whose run is quick.
func reuseEnv(t *testing.T, f *envtest.Fixture, extra map[string]any, globals environments.Params) (environments.Environment, string) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "setups")
	cfg := map[string]any{
		"tunable_params":         []string{"boot"},
		"const_args":             map[string]any{"mark": mark, "failflag": filepath.Join(f.Dir, "fail"), "opt": "O2"},
		"required_args":          []string{"jobs"},
		"shell_env_params":       []string{"mark", "failflag", "idle"},
		"setup":                  []string{`echo "$idle" >> "$mark"`, `test ! -e "$failflag"`},
		"run":                    []string{"echo score,1"},
		"teardown":               []string{"true"},
		"results_stdout_pattern": "(score),(\\S+)",
	}
	for k, v := range extra {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	if globals == nil {
		globals = environments.Params{}
	}
	if _, ok := globals["jobs"]; !ok {
		globals["jobs"] = int64(4)
	}
	return localEnv(t, f, cfg, globals), mark
}

// TestSetupReuse walks one environment through the cases: same values
// (skipped), another value of its own tunable (runs), a tunable of
// another group (skipped), trial_id (not declared: skipped), a declared
// required_arg or const_arg changed by the trial's globals (runs), a
// failed setup (never remembered), a teardown (forgets), a failed trial
// (ForgetSetup).
func TestSetupReuse(t *testing.T) {
	f := envtest.New(t, nil)
	env, mark := reuseEnv(t, f, map[string]any{"bench_reuse_setup": true}, nil)
	reused := environments.SetupReusedMetric("TestLocalEnv")
	setupWall := local.MeasurementName("TestLocalEnv", "setup", local.MeasureWall)
	halt := map[string]any{"idle": "halt"}
	mwait := map[string]any{"idle": "mwait"}

	steps := []struct {
		name    string
		values  map[string]any
		globals environments.Params
		before  func()
		fails   bool
		setups  int // marker lines after the step
	}{
		{name: "first trial sets up", values: halt, setups: 1},
		{name: "same values: skipped", values: halt, globals: environments.Params{"trial_id": int64(2)}, setups: 1},
		{name: "another group's tunable: skipped", values: map[string]any{"idle": "halt", "kernel_sched_latency_ns": int64(100000000)}, setups: 1},
		{name: "own tunable changed: runs", values: mwait, setups: 2},
		{name: "back to the first value: runs (only the last setup is remembered)", values: halt, setups: 3},
		{name: "declared required_arg changed: runs", values: halt, globals: environments.Params{"jobs": int64(8)}, setups: 4},
		{name: "declared const_arg changed by a global: runs", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"}, setups: 5},
		{name: "same again: skipped", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"}, setups: 5},
		{name: "a global the environment does not declare: skipped", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3", "other": 1}, setups: 5},
		{name: "failing setup", values: mwait, before: func() { os.WriteFile(filepath.Join(f.Dir, "fail"), nil, 0o644) }, fails: true, setups: 6},
		{name: "same values after a failed setup: runs again", values: mwait, fails: true, setups: 7},
		{name: "the values of the last good setup: runs (a failed setup forgets)", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"},
			before: func() { os.Remove(filepath.Join(f.Dir, "fail")) }, setups: 8},
		{name: "teardown forgets", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"}, before: func() {
			if err := env.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, setups: 9},
		{name: "a failed trial forgets", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"}, before: func() { environments.ForgetSetup(env) }, setups: 10},
		{name: "and then skipped again", values: halt, globals: environments.Params{"jobs": int64(8), "opt": "O3"}, setups: 10},
	}
	prev := 0
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		g := environments.Params{"jobs": int64(4), "trial_id": int64(1)}
		for k, v := range s.globals {
			g[k] = v
		}
		res, err := reuseTrial(t, env, withValues(t, f, s.values), g)
		if got := lines(t, mark); got != s.setups {
			t.Fatalf("%s: %d setups, want %d", s.name, got, s.setups)
		}
		if s.fails {
			if err == nil {
				t.Fatalf("%s: setup succeeded", s.name)
			}
			prev = s.setups
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		succeeded(t, res)
		skipped := s.setups == prev
		want := int64(0)
		if skipped {
			want = 1
		}
		if res.Metrics[reused] != want {
			t.Errorf("%s: %s = %v, want %d", s.name, reused, res.Metrics[reused], want)
		}
		if _, measured := res.Metrics[setupWall]; measured == skipped {
			t.Errorf("%s: setup skipped %v but %s reported %v", s.name, skipped, setupWall, measured)
		}
		if res.Metrics["score"] != int64(1) {
			t.Errorf("%s: results %v", s.name, res.Metrics)
		}
		prev = s.setups
	}
}

// TestSetupReuseOffByDefault: without the key (mlos_bench's behaviour)
// every trial sets up and no reuse metric is reported; the global alone
// turns it on, and overrides the config key; a bad value is an error, not
// a panic.
func TestSetupReuseOffByDefault(t *testing.T) {
	f := envtest.New(t, nil)
	halt := map[string]any{"idle": "halt"}
	run := func(env environments.Environment, n int) map[string]any {
		var last map[string]any
		for range n {
			res, err := reuseTrial(t, env, withValues(t, f, halt), environments.Params{"jobs": int64(4)})
			if err != nil {
				t.Fatal(err)
			}
			succeeded(t, res)
			last = res.Metrics
		}
		return last
	}
	reused := environments.SetupReusedMetric("TestLocalEnv")

	env, mark := reuseEnv(t, f, nil, nil)
	m := run(env, 3)
	if got := lines(t, mark); got != 3 {
		t.Errorf("without bench_reuse_setup: %d setups for 3 trials", got)
	}
	if _, ok := m[reused]; ok {
		t.Errorf("without bench_reuse_setup the results have %s: %v", reused, m)
	}

	env, mark = reuseEnv(t, f, nil, environments.Params{local.MeasurementsKey: false, environments.ReuseSetupKey: "true"})
	run(env, 3)
	if got := lines(t, mark); got != 1 {
		t.Errorf("with the global on: %d setups for 3 trials, want 1", got)
	}

	// A global overrides the config key, as globals override config keys
	// in mlos_bench (--bench_reuse_setup false turns it off everywhere).
	env, mark = reuseEnv(t, f, map[string]any{"bench_reuse_setup": true}, environments.Params{environments.ReuseSetupKey: "false"})
	run(env, 2)
	if got := lines(t, mark); got != 2 {
		t.Errorf("config true, global false: %d setups for 2 trials, want 2", got)
	}

	if _, err := f.TryBuild(envJSON(t, "mlos_bench.environments.LocalEnv", "bad", map[string]any{
		"run": []string{"true"}}), environments.Params{environments.ReuseSetupKey: "maybe"}); err == nil || !strings.Contains(err.Error(), "bench_reuse_setup") {
		t.Errorf("a bad global: %v", err)
	}
}

// TestSetupReuseKeepsDumpFiles: a skipped setup still writes
// dump_params_file into the fresh working directory, for the run.
func TestSetupReuseKeepsDumpFiles(t *testing.T) {
	f := envtest.New(t, nil)
	env, mark := reuseEnv(t, f, map[string]any{
		"bench_reuse_setup": true,
		"dump_params_file":  "params.json",
		"run":               []string{`grep -q halt params.json && echo score,1`},
	}, nil)
	for i := range 2 {
		res, err := reuseTrial(t, env, withValues(t, f, map[string]any{"idle": "halt"}), environments.Params{"jobs": int64(4)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != environments.SUCCEEDED {
			t.Fatalf("trial %d: %s %s", i+1, res.Status, res.Reason)
		}
	}
	if got := lines(t, mark); got != 1 {
		t.Errorf("%d setups, want 1", got)
	}
}

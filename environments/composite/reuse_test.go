package composite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
)

// TestCompositeSetupReuse: each child decides for itself. The "build"
// child (bench_reuse_setup, bound to the boot group) sets up only when
// idle changes; the "bench" child (no key, bound to the kernel group) sets
// up every trial. Each reports its own bench.<child>.setup.reused when it
// has the key. SetupAffinity looks into the children; ForgetSetup forgets
// them all; a failing later child makes the trial's setup fail, and the
// runner's ForgetSetup makes the build child set up again.
func TestCompositeSetupReuse(t *testing.T) {
	f := envtest.New(t, nil)
	dir := t.TempDir()
	env := f.Build(fmt.Sprintf(`{
		"name": "top", "class": "mlos_bench.environments.CompositeEnv",
		"config": {"const_args": {"dir": %q}, "children": [
			{"name": "build", "class": "mlos_bench.environments.LocalEnv",
			 "config": {"tunable_params": ["boot"], "required_args": ["dir"], "shell_env_params": ["dir", "idle"],
			            "bench_reuse_setup": true,
			            "setup": ["echo $idle >> $dir/build"], "run": ["true"]}},
			{"name": "bench", "class": "mlos_bench.environments.LocalEnv",
			 "config": {"tunable_params": ["kernel"], "required_args": ["dir"], "shell_env_params": ["dir"],
			            "setup": ["echo x >> $dir/bench", "test ! -e $dir/fail"], "run": ["echo score,1"],
			            "results_stdout_pattern": "(score),(\\S+)"}}
		]}
	}`, dir), nil)
	count := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.Count(string(b), "\n")
	}
	ctx := context.Background()
	trialWith := func(idle string, latency int64) (environments.Result, error) {
		tun := f.Tunables.Copy()
		if err := tun.Assign(map[string]any{"idle": idle, "kernel_sched_latency_ns": latency}); err != nil {
			t.Fatal(err)
		}
		if err := env.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		if err := env.Setup(ctx, tun, nil); err != nil {
			return environments.Result{}, err
		}
		return env.Run(ctx), nil
	}
	reusedOf := func(res environments.Result) any { return res.Metrics[environments.SetupReusedMetric("build")] }

	steps := []struct {
		idle          string
		latency       int64
		build, bench  int
		reused        any
		failFlag      bool
		forgetBetween bool
	}{
		{idle: "halt", latency: 100000000, build: 1, bench: 1, reused: int64(0)},
		{idle: "halt", latency: 200000000, build: 1, bench: 2, reused: int64(1)},
		{idle: "mwait", latency: 200000000, build: 2, bench: 3, reused: int64(0)},
		{idle: "mwait", latency: 300000000, build: 2, bench: 4, reused: int64(1)},
		{idle: "mwait", latency: 300000000, build: 2, bench: 5, failFlag: true},
		// The trial failed: the runner forgets every environment's setup.
		{idle: "mwait", latency: 300000000, build: 3, bench: 6, reused: int64(0), forgetBetween: true},
	}
	for i, s := range steps {
		if s.forgetBetween {
			environments.ForgetSetup(env)
		}
		if s.failFlag {
			os.WriteFile(filepath.Join(dir, "fail"), nil, 0o644)
		} else {
			os.Remove(filepath.Join(dir, "fail"))
		}
		res, err := trialWith(s.idle, s.latency)
		if s.failFlag {
			if err == nil {
				t.Fatalf("step %d: setup succeeded", i+1)
			}
		} else if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		} else if res.Status != environments.SUCCEEDED {
			t.Fatalf("step %d: %s %s", i+1, res.Status, res.Reason)
		} else {
			if got := reusedOf(res); got != s.reused {
				t.Errorf("step %d: bench.build.setup.reused = %v, want %v", i+1, got, s.reused)
			}
			if _, ok := res.Metrics[environments.SetupReusedMetric("bench")]; ok {
				t.Errorf("step %d: the child without the key reports reuse", i+1)
			}
			if _, ok := res.Metrics["bench.build.setup.wall_s"]; ok == (s.reused == int64(1)) {
				t.Errorf("step %d: bench.build.setup.wall_s present %v with reused %v", i+1, ok, s.reused)
			}
		}
		if b, c := count("build"), count("bench"); b != s.build || c != s.bench {
			t.Fatalf("step %d: build set up %d times (want %d), bench %d (want %d)", i+1, b, s.build, c, s.bench)
		}
	}

	if !environments.SetupAffinity(env, map[string]string{"idle": "mwait", "kernel_sched_latency_ns": "1"}) {
		t.Error("no affinity for the build child's remembered idle value")
	}
	if environments.SetupAffinity(env, map[string]string{"idle": "halt"}) {
		t.Error("affinity for another idle value")
	}
	environments.ForgetSetup(env)
	if environments.SetupAffinity(env, map[string]string{"idle": "mwait"}) {
		t.Error("affinity after ForgetSetup")
	}
}

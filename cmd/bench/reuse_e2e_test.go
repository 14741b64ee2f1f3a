package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setupReuseExperiment writes a build-then-run benchmark: a CompositeEnv
// whose "build" child (bench_reuse_setup) appends a line to a marker file
// at each setup and writes the build into the runner's folder, and whose
// "run" child prints the score and the build it ran, failing for
// threads=13. A ManualOptimizer walks the given configurations in order.
func setupReuseExperiment(t *testing.T, cycle string) string {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{
		"build": {"cost": 100, "params": {"build_opt": {"type": "categorical", "values": ["O0", "O2", "O3"], "default": "O0"}}},
		"runtime": {"cost": 1, "params": {"threads": {"type": "int", "range": [1, 16], "default": 1}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "app", "class": "mlos_bench.environments.CompositeEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"const_args": {"root": "`+dir+`"},
			"children": [
				{"name": "build", "class": "mlos_bench.environments.LocalEnv",
				 "config": {"tunable_params": ["build"], "required_args": ["root"],
				            "shell_env_params": ["build_opt", "root"],
				            "temp_dir": "$root/work-$trial_runner_id",
				            "setup": ["echo \"$build_opt\" >> \"$root/setups\"", "echo \"$build_opt\" > app.build"],
				            "bench_reuse_setup": true}},
				{"name": "run", "class": "mlos_bench.environments.LocalEnv",
				 "config": {"tunable_params": ["runtime"], "required_args": ["root"],
				            "shell_env_params": ["threads"],
				            "temp_dir": "$root/work-$trial_runner_id",
				            "run": ["test \"$threads\" != 13", "echo \"score=$threads\"", "echo \"built_opt=$(cat app.build)\""],
				            "results_stdout_pattern": "^(\\w+)=(\\S+)$"}}
			]
		}
	}`, 0o644)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.ManualOptimizer",
		"config": {"max_cycles": 1, "tunable_values_cycle": `+cycle+`}}`, 0o644)
	return dir
}

// TestSetupReuseEndToEnd runs bench with and without reuse over the same
// configurations and counts the builds through the marker file: the build
// is skipped while build_opt stays the same, runs again after a failed
// trial, and every trial runs the build of its own build_opt. The results
// and bench show say which setups were reused; a skipped setup has no
// setup wall time.
func TestSetupReuseEndToEnd(t *testing.T) {
	cycle := `[
		{"build_opt": "O2", "threads": 1},
		{"build_opt": "O2", "threads": 2},
		{"build_opt": "O2", "threads": 13},
		{"build_opt": "O2", "threads": 4},
		{"build_opt": "O3", "threads": 1},
		{"build_opt": "O3", "threads": 5},
		{"build_opt": "O2", "threads": 6}
	]`
	// trial: 1 builds O2; 2 reuses; 3 reuses but fails, so 4 builds O2
	// again; 5 builds O3; 6 reuses; 7 builds O2.
	wantSetups := "O2\nO2\nO3\nO2\n"
	wantReused := map[string]string{"1": "0", "2": "1", "4": "0", "5": "0", "6": "1", "7": "0"}

	for _, reuse := range []bool{true, false} {
		dir := setupReuseExperiment(t, cycle)
		args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "R", "--no-progress"}
		if !reuse {
			args = append(args, "--bench_reuse_setup", "false")
		}
		r := runBench(t, dir, args...)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("reuse %v: exit %d\n%s%s", reuse, r.code, r.stdout, r.stderr)
		}
		setups, err := os.ReadFile(filepath.Join(dir, "setups"))
		if err != nil {
			t.Fatal(err)
		}
		rows := csvRows(t, runBench(t, dir, "results", "--format", "csv").stdout)
		if len(rows) != 7 {
			t.Fatalf("reuse %v: %d trials, want 7", reuse, len(rows))
		}
		if !reuse {
			if got := strings.Count(string(setups), "\n"); got != 7 {
				t.Errorf("without reuse: %d builds for 7 trials:\n%s", got, setups)
			}
			for _, row := range rows {
				if v, ok := row["result.bench.build.setup.reused"]; ok && v != "" {
					t.Errorf("without reuse, trial %s reports setup.reused=%s", row["trial"], v)
				}
			}
			continue
		}
		if string(setups) != wantSetups {
			t.Errorf("builds:\n%swant:\n%s", setups, wantSetups)
		}
		for _, row := range rows {
			id := row["trial"]
			if id == "3" {
				if row["status"] != "FAILED" {
					t.Errorf("trial 3: %s", row["status"])
				}
				continue
			}
			if row["status"] != "SUCCEEDED" {
				t.Errorf("trial %s: %s", id, row["status"])
				continue
			}
			if row["result.built_opt"] != row["config.build_opt"] {
				t.Errorf("trial %s ran build %s for build_opt %s", id, row["result.built_opt"], row["config.build_opt"])
			}
			if got := row["result.bench.build.setup.reused"]; got != wantReused[id] {
				t.Errorf("trial %s: setup.reused %q, want %q", id, got, wantReused[id])
			}
			wall := row["result.bench.build.setup.wall_s"]
			if (wall == "") != (wantReused[id] == "1") {
				t.Errorf("trial %s: setup wall time %q with setup.reused %s", id, wall, wantReused[id])
			}
		}
		show := runBench(t, dir, "show", "2")
		if show.code != 0 || !strings.Contains(show.stdout, `bench_reuse_setup: setup reused (skipped) by "build"`) {
			t.Errorf("show 2: exit %d\n%s%s", show.code, show.stdout, show.stderr)
		}
		show = runBench(t, dir, "show", "1")
		if show.code != 0 || !strings.Contains(show.stdout, `bench_reuse_setup: setup run by "build"`) {
			t.Errorf("show 1: exit %d\n%s%s", show.code, show.stdout, show.stderr)
		}
	}
}

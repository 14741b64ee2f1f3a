package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMistakesCostOneTrial: a missing script with 4 runners costs one
// trial (the canary runs alone and stops the experiment), its failure is
// printed once, and --no-canary starts every runner at once.
func TestMistakesCostOneTrial(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{"name": "e", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "run": ["scripts/missing.sh"]}}`, 0o644)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"optimizer_type": "RANDOM", "max_suggestions": 20}}`, 0o644)
	db := filepath.Join(dir, "db.sqlite")
	write(t, dir, "storage.jsonc", `{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "sqlite", "database": "`+db+`"}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "storage.jsonc",
		"--num_trial_runners", "4", "--no-progress", "--experiment_id", "canary")
	if r.code != 1 || !strings.Contains(r.stderr, "(the canary)") {
		t.Fatalf("exit %d, want 1 and the canary's stop:\n%s", r.code, r.stderr)
	}
	if rows := trialRows(t, db, "canary"); len(rows) != 1 {
		t.Errorf("%d trials ran, want 1: %v", len(rows), rows)
	}
	if n := strings.Count(r.stderr, "trial finished trial=1 status=FAILED"); n != 1 || strings.Contains(r.stderr, "script failed") {
		t.Errorf("the failure is not printed once:\n%s", r.stderr)
	}
	r = runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "storage.jsonc",
		"--num_trial_runners", "4", "--no-progress", "--experiment_id", "nocanary", "--no-canary")
	if r.code != 1 || strings.Contains(r.stderr, "(the canary)") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if rows := trialRows(t, db, "nocanary"); len(rows) < 4 {
		t.Errorf("%d trials ran with --no-canary, want one per runner at least: %v", len(rows), rows)
	}
}

// TestPatternMatchedNothing: a results pattern that matches none of the
// output and a target named like no result say so, with the output's
// first lines and the closest metric name.
func TestPatternMatchedNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{"name": "e", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "run": ["echo starting", "echo score: 12.5"], "results_stdout_pattern": "^(\\w+)=(\\S+)$"}}`, 0o644)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.OneShotOptimizer", "config": {"optimization_targets": {"score": "min"}}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "storage/in-memory.jsonc", "--no-progress")
	for _, w := range []string{`matched none of the run's 2 output line(s); they are: \"starting\", \"score: 12.5\"`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %s:\n%s", w, r.stderr)
		}
	}
	write(t, dir, "env.jsonc", `{"name": "e", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "run": ["echo score: 12.5"], "results_stdout_pattern": "^(\\w+): (\\S+)$"}}`, 0o644)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.OneShotOptimizer", "config": {"optimization_targets": {"scor": "min"}}}`, 0o644)
	r = runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "storage/in-memory.jsonc", "--no-progress")
	if !strings.Contains(r.stderr, `no \"scor\" metric, the optimization target; did you mean \"score\"?`) {
		t.Errorf("no did-you-mean:\n%s", r.stderr)
	}
}

// TestEndOfRunChecks: mlos_bench's end-of-run checks fail the run, with
// its words: a grid smaller than max_suggestions ("Expected N trials, but
// only M were run") and more than 20% of the trials not succeeded ("Too
// many trials failed").
func TestEndOfRunChecks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 4], "default": 2}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{"name": "e", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "shell_env_params": ["xv"], "run": ["./run.sh"], "results_stdout_pattern": "^(\\w+): (\\S+)$"}}`, 0o644)
	// Odd values fail.
	write(t, dir, "run.sh", "#!/bin/sh\n[ $((xv % 2)) -eq 0 ] || exit 3\necho score: $xv\n", 0o755)
	write(t, dir, "grid.jsonc", `{"class": "mlos_bench.optimizers.GridSearchOptimizer", "config": {"max_suggestions": 8}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "grid.jsonc", "--storage", "storage/in-memory.jsonc", "--no-progress", "--fail-fast", "0")
	// The grid has 5 points: 2 of 5 fail (40%), and 5 < 8.
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"Expected 8 trials, but only 5 were run. Check configuration, scripts, and logs for details.",
		"Too many trials failed: 2 out of 5. Check configuration, scripts, and logs for details."} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	// 1 failure in 5 is 20%, not more; a budget the grid fills: exit 0.
	write(t, dir, "run.sh", "#!/bin/sh\n[ $xv -ne 3 ] || exit 3\necho score: $xv\n", 0o755)
	write(t, dir, "grid.jsonc", `{"class": "mlos_bench.optimizers.GridSearchOptimizer", "config": {"max_suggestions": 5}}`, 0o644)
	r = runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "grid.jsonc", "--storage", "storage/in-memory.jsonc", "--no-progress")
	if r.code != 0 {
		t.Errorf("exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMockOptFirstTrialAsMlosBench: mlos_bench's launcher test
// test_launch_main_app_opt (cli/mock-opt.jsonc: the mock environment and
// the default MlosCoreOptimizer, 3 repeats, 3 suggestions, mock_env_seed
// 42) expects the first configuration's score, 64.53..., to be the final
// one: its first suggestion puts tunables with special values at their
// special value (sched_migration_cost_ns=-1), as bench now does.
func TestMockOptFirstTrialAsMlosBench(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "globals.jsonc", `{"experiment_id": "MockExperiment", "trial_id": 1, "max_suggestions": 5}`, 0o644)
	r := runBench(t, dir, "--environment", "environments/mock/mock_env.jsonc", "--optimizer", "optimizers/mlos_core_default_opt.jsonc",
		"--globals", "globals.jsonc", "--trial_config_repeat_count", "3", "--max_suggestions", "3", "--mock_env_seed", "42",
		"--storage", "storage/in-memory.jsonc", "--no-progress", "--log_file", "run.log")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !regexp.MustCompile(`(?m)INFO Final score: \{'score': 64\.53\d+\}\s*$`).MatchString(log) {
		t.Errorf("final score is not mlos_bench's 64.53...:\n%s", log)
	}
	first := regexp.MustCompile(`Iteration 1 :: Register: .*`).FindString(log)
	if !strings.Contains(first, "sched_migration_cost_ns[int]((0, 1000000):500000)=-1") {
		t.Errorf("the first configuration does not use the special value: %s", first)
	}
}

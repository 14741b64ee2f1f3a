package main

import (
	"path/filepath"
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

package main

import (
	"slices"
	"strings"
	"testing"
)

// Stopping rules, repeats aggregated, a noise-aware run and bench confirm,
// from the command line.
func TestNoiseEndToEnd(t *testing.T) {
	// Noise from the trial id: the score is (xv-30)² plus 0..49.
	dir := experiment(t, "")
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\nprintf 'metric,value\\nscore,%s\\ncost,1\\n' \"$(( (xv - 30) * (xv - 30) + (trial_id * 37 % 50) ))\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "SMAC", "max_suggestions": 40, "seed": 1}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "N1",
		"--trial_config_repeat_count", "2", "--max_cost", "16", "--cost_metric", "cost", "--noise_aware", "true",
		"--repeat_aggregate", "median", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"16 trials", "End reason: max_cost 16 reached", "Best: config", "noise-aware: the model's posterior mean", "learned noise"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runBench(t, dir, "results", "--experiment", "N1", "--by-config", "--aggregate", "median")
	if r.code != 0 || !strings.Contains(r.stderr, "bench: end reason: max_cost 16 reached") || !strings.Contains(r.stdout, "interval") {
		t.Fatalf("results --by-config: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if rows := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "config ") }); rows < 0 || len(lines)-rows-1 != 8 {
		t.Errorf("8 configurations expected:\n%s", r.stdout)
	}
	r = runBench(t, dir, "confirm", "N1", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--top_k", "2", "--repeats", "4", "--no-progress")
	if r.code != 0 {
		t.Fatalf("confirm: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"28 trials", "12 run now", "Confirmation: ", "n=4+4", "End reason: bench confirm"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("confirm output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runBench(t, dir, "results", "--experiment", "N1")
	if r.code != 0 || !strings.Contains(r.stdout, "Confirmation: ") || !strings.Contains(r.stdout, "Best: config") {
		t.Errorf("results after confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "confirm")
	if r.code != 2 || !strings.Contains(r.stderr, "name the experiment") {
		t.Errorf("confirm without an experiment: exit %d %s", r.code, r.stderr)
	}
}

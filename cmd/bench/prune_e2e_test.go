package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEarlyStoppingExample: the early-stopping example (the mock
// environment's learning curve and the ASHA pruner) prunes trials from the
// command line: they are stored CANCELED (as mlos_bench knows it) with a
// "pruned: ..." reason that bench results shows, the run counts them as
// pruned, not failed, and exits 0.
func TestEarlyStoppingExample(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	r := runBench(t, dir, "--config", filepath.Join(root, "configs/examples/early-stopping/cli.jsonc"),
		"--config_path", filepath.Join(root, "configs/examples"), "--max_suggestions", "10", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, " pruned)") || strings.Contains(r.stdout+r.stderr, "Too many trials failed") {
		t.Errorf("summary:\n%s%s", r.stdout, r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "early-stopping")
	n := map[string]int{}
	for _, st := range rows {
		n[st]++
	}
	if len(rows) != 10 || n["CANCELED"] == 0 || n["SUCCEEDED"] == 0 || n["CANCELED"]+n["SUCCEEDED"] != 10 {
		t.Fatalf("trial statuses %v, want 10 trials, some pruned (CANCELED), the others SUCCEEDED", rows)
	}
	if rows[1] != "SUCCEEDED" {
		t.Errorf("the first trial, alone at every rung, was stopped: %v", rows)
	}
	r = runBench(t, dir, "results", "--experiment", "early-stopping")
	if r.code != 0 || strings.Count(r.stdout, "run: pruned: score value") != n["CANCELED"] {
		t.Errorf("results: exit %d, want %d pruned reasons\n%s%s", r.code, n["CANCELED"], r.stdout, r.stderr)
	}
}

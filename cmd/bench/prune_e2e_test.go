package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestPrunedTrialSurvivesKill: a trial pruned before bench is killed
// (SIGKILL) stays pruned, with its reason, after the resume, which neither
// runs it again nor fails on it, and finishes the budget.
func TestPrunedTrialSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	args := []string{"--config", filepath.Join(root, "configs/examples/early-stopping/cli.jsonc"),
		"--config_path", filepath.Join(root, "configs/examples"), "--max_suggestions", "16",
		"--mock_env_progress_delay", "0.05", "--no-progress"}
	db := filepath.Join(dir, "bench.sqlite")
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = benchEnv(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	var before map[int]string
	for {
		if _, err := os.Stat(db); err == nil {
			before = prunedTrialReasons(t, db)
		}
		pruned := 0
		for _, r := range before {
			if strings.HasPrefix(r, "CANCELED run: pruned: ") {
				pruned++
			}
		}
		if pruned >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no trial was pruned: %v", before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before = prunedTrialReasons(t, db)
	finished := 0
	for _, st := range before {
		if strings.HasPrefix(st, "SUCCEEDED") || strings.HasPrefix(st, "CANCELED") {
			finished++
		}
	}
	if finished >= 16 {
		t.Fatalf("the run had ended before the kill: %v", before)
	}
	r := runBench(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := prunedTrialReasons(t, db)
	if len(after) != 16 {
		t.Fatalf("want the 16 planned trials, got %d: %v", len(after), after)
	}
	for id, st := range before {
		if strings.HasPrefix(st, "CANCELED run: pruned: ") && after[id] != st {
			t.Errorf("trial %d was pruned before the kill (%q) and is now %q", id, st, after[id])
		}
	}
	for id, st := range after {
		if !strings.HasPrefix(st, "SUCCEEDED") && !strings.HasPrefix(st, "CANCELED run: pruned: ") {
			t.Errorf("trial %d: %q", id, st)
		}
	}
}

// prunedTrialReasons maps the experiment's trials to "STATUS reason".
func prunedTrialReasons(t *testing.T, dbPath string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, status, COALESCE(failure_reason, '') FROM trial WHERE exp_id = 'early-stopping'`)
	if err != nil {
		return nil // not created yet
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id int
		var st, reason string
		if err := rows.Scan(&id, &st, &reason); err != nil {
			t.Fatal(err)
		}
		out[id] = strings.TrimSpace(st + " " + reason)
	}
	return out
}

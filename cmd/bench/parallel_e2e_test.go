package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStopCommand: bench stop EXPERIMENT TRIAL stops a hanging trial of a
// running bench (stored CANCELED, its processes killed) and the experiment
// goes on; a finished or unknown trial is an error.
func TestStopCommand(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; if [ "$trial_id" = 1 ]; then sleep 60; fi`)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "S",
		"--max_suggestions", "4", "--num_trial_runners", "2", "--no-progress"}
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = benchEnv(t)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, "started"))
		if strings.HasPrefix(string(data), "1\n") || strings.Contains(string(data), "\n1\n") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("trial 1 did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := runBench(t, dir, "stop", "S", "1"); r.code != 0 || !strings.Contains(r.stderr, "stop trial 1") {
		t.Fatalf("bench stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("bench did not finish after the stop:\n%s", out.String())
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "S")
	if len(rows) != 4 || rows[1] != "CANCELED" {
		t.Fatalf("trials %v, want 4 with trial 1 CANCELED\n%s", rows, out.String())
	}
	for id := 2; id <= 4; id++ {
		if rows[id] != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, rows[id])
		}
	}
	if r := runBench(t, dir, "show", "1"); !strings.Contains(r.stdout, "CANCELED") || !strings.Contains(r.stdout, "bench stop") {
		t.Errorf("show 1:\n%s", r.stdout)
	}
	if r := runBench(t, dir, "stop", "S", "2"); r.code != 1 || !strings.Contains(r.stderr, "already finished") {
		t.Errorf("stopping a finished trial: exit %d %s", r.code, r.stderr)
	}
	if r := runBench(t, dir, "stop", "S", "99"); r.code != 2 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("stopping an unknown trial: exit %d %s", r.code, r.stderr)
	}
	if r := runBench(t, dir, "stop", "nope"); r.code != 2 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("stopping an unknown experiment: exit %d %s", r.code, r.stderr)
	}
}

// TestWorkerSQLite: a driver and a worker share an experiment in one
// SQLite file; both run trials and every trial is stored once.
func TestWorkerSQLite(t *testing.T) {
	dir := experiment(t, `sleep 0.2`)
	common := []string{"--environment", "env.jsonc", "--experiment_id", "W", "--no-progress", "--no-teardown"}
	if r := runBench(t, dir, append([]string{"worker"}, common...)...); r.code != 2 || !strings.Contains(r.stderr, "start its driver") {
		t.Fatalf("a worker without a driver: exit %d\n%s", r.code, r.stderr)
	}
	tmp := t.TempDir()
	driver := startBench(t, dir, tmp, "driver", append([]string{"run", "--optimizer", "opt.jsonc"}, common...)...)
	time.Sleep(300 * time.Millisecond)
	worker := startBench(t, dir, tmp, "worker", append([]string{"worker", "--num_trial_runners", "2"}, common...)...)
	for name, c := range map[string]*exec.Cmd{"driver": driver, "worker": worker} {
		if err := c.Wait(); err != nil {
			log, _ := os.ReadFile(filepath.Join(tmp, name+".log"))
			t.Fatalf("%s: %v\n%s", name, err, log)
		}
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "W")
	if len(rows) != 12 {
		t.Fatalf("%d trials, want 12: %v", len(rows), rows)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	log, _ := os.ReadFile(filepath.Join(tmp, "worker.log"))
	if !strings.Contains(string(log), "(worker)") || strings.Contains(string(log), " 0 run now") {
		t.Errorf("the worker ran no trial:\n%s", log)
	}
}

// TestReuseFrom: --reuse-from reuses another experiment's results only when
// its environment config and git commit match; --no-reuse runs everything.
func TestReuseFrom(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"`)
	base := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "4", "--no-progress", "--format", "json"}
	if r := runBench(t, dir, append(base, "--experiment_id", "A")...); r.code != 0 {
		t.Fatalf("A: exit %d\n%s", r.code, r.stderr)
	}
	starts := func() int {
		data, _ := os.ReadFile(filepath.Join(dir, "started"))
		return strings.Count(string(data), "\n")
	}
	if starts() != 4 {
		t.Fatalf("A ran %d trials", starts())
	}
	// The same optimizer (same seed) suggests the same configurations: B
	// reuses all of A's results.
	r := runBench(t, dir, append(base, "--experiment_id", "B", "--reuse-from", "A")...)
	if r.code != 0 || !strings.Contains(r.stdout, `"reused": 4`) || starts() != 4 {
		t.Fatalf("B: exit %d, %d trials ran in all\n%s%s", r.code, starts(), r.stdout, r.stderr)
	}
	if r := runBench(t, dir, "show", "--experiment", "B", "2"); !strings.Contains(r.stdout, "Reused the result of trial 2 of experiment A") {
		t.Errorf("show B 2:\n%s", r.stdout)
	}
	// bench results and bench export say which rows are reused copies
	// (issue 24).
	if r := runBench(t, dir, "results", "--experiment", "B", "--format", "csv"); !strings.Contains(r.stdout, "reused_from") || !strings.Contains(r.stdout, "A:2") {
		t.Errorf("results B: no reused_from A:2\n%s%s", r.stdout, r.stderr)
	}
	if r := runBench(t, dir, "export", "B"); r.code != 0 {
		t.Errorf("export B: exit %d\n%s", r.code, r.stderr)
	} else if rows := csvRows(t, r.stdout); len(rows) != 4 || rows[1]["trial_id"] != "2" || rows[1]["reused_from"] != "2" || rows[1]["reused_from_experiment"] != "A" {
		t.Errorf("export B: reused_from not set:\n%s", r.stdout)
	}
	// Another environment config: nothing is reused, and a warning says why.
	data, _ := os.ReadFile(filepath.Join(dir, "env.jsonc"))
	write(t, dir, "env2.jsonc", string(data), 0o644)
	other := []string{"--environment", "env2.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "4", "--no-progress", "--format", "json"}
	r = runBench(t, dir, append(other, "--experiment_id", "C", "--reuse-from", "A")...)
	if r.code != 0 || strings.Contains(r.stdout, `"reused"`) || starts() != 8 || !strings.Contains(r.stderr, "environment config or git commit differs") {
		t.Fatalf("C: exit %d, %d trials ran in all\n%s%s", r.code, starts(), r.stdout, r.stderr)
	}
	// --no-reuse with the same configurations again: everything runs.
	r = runBench(t, dir, append(base, "--experiment_id", "D", "--reuse-from", "A", "--no-reuse")...)
	if r.code != 0 || strings.Contains(r.stdout, `"reused"`) || starts() != 12 {
		t.Fatalf("D: exit %d, %d trials ran in all\n%s%s", r.code, starts(), r.stdout, r.stderr)
	}
}

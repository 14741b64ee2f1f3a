package main

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
)

// A local script reports progress by printed lines and by a progress
// file; bench run stores both as telemetry with a step, bench show prints
// them as a table and bench export sums them up.
func TestTrialProgressEndToEnd(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "env.jsonc", `{
		"name": "p",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {
			"run": ["run.sh"],
			"progress_pattern": "^BENCH_PROGRESS\\b",
			"progress_file": "progress.jsonl",
			"progress_poll_interval": "50ms",
			"results_stdout_pattern": "^(score)=([0-9.]+)$"
		}
	}`, 0o644)
	write(t, dir, "run.sh", `#!/bin/sh
for i in 0 1 2; do
  echo "BENCH_PROGRESS step=$i latency_ms=1$i"
  echo "{\"step\": $i, \"loss\": 0.$((9 - i))}" >> progress.jsonl
done
echo score=1.5
`, 0o755)
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "P", "--trial_config_repeat_count", "1")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, steps int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT step) FROM trial_telemetry WHERE exp_id = 'P' AND trial_id = 1 AND step IS NOT NULL`).Scan(&n, &steps); err != nil {
		t.Fatal(err)
	}
	if n != 6 || steps != 3 {
		t.Errorf("%d progress rows over %d steps stored, want 6 over 3", n, steps)
	}
	r = runBench(t, dir, "show", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Progress (6 reports)") || !strings.Contains(r.stdout, "latency_ms") ||
		!strings.Contains(r.stdout, "0.7") || !strings.Contains(r.stdout, "12") {
		t.Errorf("show 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "export", "P")
	if r.code != 0 || !strings.Contains(r.stdout, "progress.loss.last") {
		t.Errorf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := csvRows(t, r.stdout)
	if len(rows) != 1 || rows[0]["progress.loss.last"] != "0.7" || rows[0]["progress.latency_ms.last_step"] != "2" || rows[0]["progress.loss.reports"] != "3" {
		t.Errorf("export rows %v", rows)
	}
}

// An engine job's progress reaches storage while the job runs: the
// job's script reports step 0, then waits until the test sees step 0 in
// the database before it reports step 1 and ends.
func TestEngineJobProgressStoredWhileRunning(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		testEngineJobProgress(t, "local", `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 1, "poll_interval": "100ms", "bench": "`+benchBin+`"}}`)
	})
	t.Run("slurm", func(t *testing.T) {
		testenv.Get(t, "BENCH_TEST_SLURM")
		part := ""
		if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
			part = `, "partition": "` + p + `"`
		}
		testEngineJobProgress(t, "slurm", `{"class": "bench.engines.SlurmEngine", "config": {"max_jobs": 1, "poll_interval": "200ms", "bench": "`+benchBin+`"`+part+`}}`)
	})
}

func testEngineJobProgress(t *testing.T, engineName, engine string) {
	dir := t.TempDir()
	// Slurm jobs may run as another user: a readable, writable folder.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(dir, "gate")
	write(t, dir, "engine.jsonc", engine, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "p",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {
			"run": ["run.sh"],
			"const_args": {"gate": "`+gate+`"},
			"shell_env_params": ["gate"],
			"progress_pattern": "^BENCH_PROGRESS\\b",
			"results_stdout_pattern": "^(score)=([0-9.]+)$"
		}
	}`, 0o644)
	write(t, dir, "run.sh", `#!/bin/sh
echo "BENCH_PROGRESS step=0 loss=0.9"
i=0; while [ ! -e "$gate" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done
[ -e "$gate" ] || { echo "step 0 never reached storage" >&2; exit 9; }
echo "BENCH_PROGRESS step=1 loss=0.5"
echo score=1.5
`, 0o755)
	cmd := exec.Command(benchBin, "--environment", "env.jsonc", "--engine", "engine.jsonc", "--experiment_id", "EP", "--no-progress")
	cmd.Dir, cmd.Env = dir, benchEnv(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stepsStored := func() int {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM trial_telemetry WHERE exp_id = 'EP' AND trial_id = 1 AND step IS NOT NULL`).Scan(&n); err != nil {
			return -1 // not created yet, or busy
		}
		return n
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("bench ended (%v) before step 0 was seen in storage:\n%s", err, out.String())
		case <-tick.C:
			if stepsStored() >= 1 {
				break wait
			}
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	var eng sql.NullString
	if err := db.QueryRow(`SELECT engine FROM trial WHERE exp_id = 'EP' AND trial_id = 1`).Scan(&eng); err != nil || eng.String != engineName {
		t.Errorf("the trial ran on engine %q (%v), want %s", eng.String, err, engineName)
	}
	if n := stepsStored(); n != 2 {
		t.Errorf("%d progress rows stored, want 2\n%s", n, out.String())
	}
	r := runBench(t, dir, "show", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Progress (2 reports)") || !strings.Contains(r.stdout, "SUCCEEDED") {
		t.Errorf("show 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

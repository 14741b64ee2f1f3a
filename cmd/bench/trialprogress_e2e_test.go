package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
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

package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
)

// slurmJobIDs returns each trial's stored Slurm job id.
func slurmJobIDs(t *testing.T, dir, exp string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, COALESCE(engine_job, '') FROM trial WHERE exp_id = ? AND engine = 'slurm'`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id int
		var ref string
		if err := rows.Scan(&id, &ref); err != nil {
			t.Fatal(err)
		}
		var r struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal([]byte(ref), &r); err != nil || r.JobID == "" {
			t.Fatalf("trial %d: engine job %q: %v", id, ref, err)
		}
		out[id] = r.JobID
	}
	return out
}

// TestSlurmEngineKillAndReattach: an experiment whose trials run as Slurm
// jobs (the real bench binary on the far side, bench exec-trial). bench is
// SIGKILLed while jobs run and started again with the same command; the
// new bench re-attaches to the jobs the first one submitted (same Slurm
// job ids, no second sbatch for them) and finishes with every trial stored
// exactly once, SUCCEEDED, its script run once.
func TestSlurmEngineKillAndReattach(t *testing.T) {
	testenv.Get(t, "BENCH_TEST_SLURM")
	const n = 10
	dir := chaosExperiment(t, n, "2")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	partition := ""
	if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
		partition = fmt.Sprintf(`"partition": %q,`, p)
	}
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.SlurmEngine",
		"config": {%s "max_jobs": 4, "time_limit": "10", "poll_interval": "200ms"}}`, partition), 0o644)
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "SE", "--no-progress"}
	cmd := startBench(t, dir, tmp, "bench", args...)
	// Kill it once three trials run on the cluster.
	deadline := time.Now().Add(90 * time.Second)
	for len(startedCounts(t, dir)) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("trials did not start:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before := slurmJobIDs(t, dir, "SE")
	if len(before) == 0 {
		t.Fatalf("no Slurm job stored before the kill")
	}

	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	if !strings.Contains(r.stderr, "re-attaching") {
		t.Errorf("the restarted bench did not say it re-attached:\n%s", r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "SE")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d", len(rows), n)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, runs := range startedCounts(t, dir) {
		if runs != 1 {
			t.Errorf("trial %s ran %d times", id, runs)
		}
	}
	jobs := engineJobs(t, dir, "SE")
	for id, job := range jobs {
		if job != "slurm/1" {
			t.Errorf("trial %d: engine job %s, want slurm/1 (submitted once)", id, job)
		}
	}
	after := slurmJobIDs(t, dir, "SE")
	for id, job := range before {
		if after[id] != job {
			t.Errorf("trial %d: Slurm job %s before the kill, %s after (resubmitted)", id, job, after[id])
		}
	}
	// One batch script per sbatch: one submission per trial that ran
	// (trials that reused an identical configuration's result ran none).
	scripts, _ := filepath.Glob(filepath.Join(dir, ".bench", "slurm", "SE", "*.sh"))
	if len(scripts) != len(jobs) {
		t.Errorf("%d jobs submitted, want %d: %v", len(scripts), len(jobs), scripts)
	}
	// The far side's output came back with the trial.
	if s := runBench(t, dir, "show", "1", "--experiment", "SE"); !strings.Contains(s.stdout, "slurm") {
		t.Errorf("bench show 1 does not name the Slurm job:\n%s", s.stdout)
	}
}

package main

import (
	dbsql "database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
)

// slurmEngineFile writes engine.jsonc for the test cluster with extra
// config keys (JSON members, trailing comma included).
func slurmEngineFile(t *testing.T, dir, extra string) {
	t.Helper()
	partition := ""
	if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
		partition = fmt.Sprintf(`"partition": %q,`, p)
	}
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.SlurmEngine",
		"config": {%s %s "poll_interval": "200ms"}}`, partition, extra), 0o644)
}

// trialReasons returns each trial's status and failure reason.
func trialReasons(t *testing.T, dir, exp string) map[int][2]string {
	t.Helper()
	db, err := dbsql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, status, COALESCE(failure_reason, '') FROM trial WHERE exp_id = ?`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int][2]string{}
	for rows.Next() {
		var id int
		var st, reason string
		if err := rows.Scan(&id, &st, &reason); err != nil {
			t.Fatal(err)
		}
		out[id] = [2]string{st, reason}
	}
	return out
}

// TestSlurmTimeLimitAndOutsideCancel: trials run as Slurm jobs with the
// real bench exec-trial on the far side. The first trial to start runs
// past the job's time limit: Slurm signals it, bench exec-trial stops the
// trial and writes an outcome that says a signal stopped it, and the
// driver asks Slurm how the job ended: TIMED_OUT (issue 22, bug 1: it was
// stored CANCELED "run cancelled"). The second is cancelled from outside
// with scancel: FAILED, and retried by max_retries (bug 2: it was
// CANCELED, never run again). Their retries succeed. Slurm counts whole
// minutes and checks limits every 30 s: this takes 60 to 100 s.
func TestSlurmTimeLimitAndOutsideCancel(t *testing.T) {
	testenv.Get(t, "BENCH_TEST_SLURM")
	t.Parallel()
	dir := chaosExperiment(t, 2, "0")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The first start sleeps past the time limit, the second waits to be
	// cancelled (it names its Slurm job), later starts (the retries) end
	// at once.
	write(t, dir, "run.sh", `#!/bin/sh
set -e
echo "$trial_id" >> "$marker_dir/started"
if mkdir "$marker_dir/first" 2>/dev/null; then
	sleep 600
elif mkdir "$marker_dir/second" 2>/dev/null; then
	echo "$SLURM_JOB_ID" > "$marker_dir/cancel-me.tmp" && mv "$marker_dir/cancel-me.tmp" "$marker_dir/cancel-me"
	sleep 600
fi
printf 'metric,value\nscore,%s\n' "$(( (xv - 30) * (xv - 30) ))" > results.csv
`, 0o755)
	slurmEngineFile(t, dir, `"max_jobs": 2, "time_limit": 1,`)
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "ST", "--no-progress", "--max_retries", "1",
		// both trials run at once from the start (the first one times out)
		"--no-canary"}
	cmd := startBench(t, dir, tmp, "bench", args...)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(120 * time.Second)
	var job []byte
	for {
		var err error
		if job, err = os.ReadFile(filepath.Join(dir, "cancel-me")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("the second trial did not start:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := exec.Command("scancel", strings.TrimSpace(string(job))).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", job, err, out)
	}
	select {
	case err := <-exited:
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("bench: %v\n%s", err, log)
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("bench did not finish:\n%s", log)
	}
	rows := trialReasons(t, dir, "ST")
	counts := map[string]int{}
	for id, r := range rows {
		counts[r[0]]++
		switch r[0] {
		case "TIMED_OUT":
			if !strings.Contains(r[1], "time limit") || !strings.Contains(r[1], "TIMEOUT") {
				t.Errorf("trial %d: TIMED_OUT %q: want the time limit and Slurm's TIMEOUT", id, r[1])
			}
		case "FAILED":
			// Slurm's SIGTERM reaches the trial's script and bench
			// exec-trial at once: either exec-trial names the signal, or
			// the script died of it first (exit code 143).
			if !strings.Contains(r[1], "CANCELLED") || !(strings.Contains(r[1], "SIGTERM") || strings.Contains(r[1], "143")) {
				t.Errorf("trial %d: FAILED %q: want Slurm's CANCELLED and the signal (or the script's exit 143)", id, r[1])
			}
		}
	}
	if want := map[string]int{"TIMED_OUT": 1, "FAILED": 1, "SUCCEEDED": 2}; fmt.Sprint(counts) != fmt.Sprint(want) {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Errorf("trials %v, want %v (two retried)\n%s", rows, want, log)
	}
}

// TestSlurmSubmitIsIdempotent: bench is SIGKILLed while sbatch has
// submitted a trial's job but not yet answered (an sbatch that answers 3 s
// late), so the job id was never recorded with the trial. The restarted
// bench looks for the job by its deterministic name (experiment, trial,
// attempt) before submitting, and follows it: each trial's script runs
// once and Slurm got one job per trial (issue 22, bug 3: the trial ran
// twice).
func TestSlurmSubmitIsIdempotent(t *testing.T) {
	testenv.Get(t, "BENCH_TEST_SLURM")
	t.Parallel()
	const n = 3
	dir := chaosExperiment(t, n, "3")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	slurmEngineFile(t, dir, `"max_jobs": 2, "time_limit": "10",`)
	real, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	// The late sbatch: submits, says so in a file, answers 3 s later.
	wrap := t.TempDir()
	write(t, wrap, "sbatch", fmt.Sprintf(`#!/bin/sh
out=$(%s "$@") || exit $?
touch %s/submitted
sleep 3
echo "$out"
`, real, dir), 0o755)
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "SI", "--no-progress"}
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PATH="+wrap+string(os.PathListSeparator)+os.Getenv("PATH"))
	logf, err := os.Create(filepath.Join(tmp, "killed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "submitted")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "killed.log"))
			t.Fatalf("nothing was submitted:\n%s", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if jobs := slurmJobIDs(t, dir, "SI"); len(jobs) != 0 {
		t.Fatalf("a job was recorded before the kill (%v): the test tests nothing", jobs)
	}

	r := runBench(t, dir, args...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "killed.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "SI")
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
	// One Slurm job per trial: the batch scripts' jobs by name.
	out, err := exec.Command("squeue", "-h", "-t", "all", "-o", "%j|%Z").Output()
	if err != nil {
		t.Fatal(err)
	}
	perTrial := map[string]int{}
	for _, line := range strings.Fields(string(out)) {
		name, wd, _ := strings.Cut(line, "|")
		if wd == dir && strings.HasPrefix(name, "bench-SI-") {
			trialPart, _, _ := strings.Cut(strings.TrimPrefix(name, "bench-SI-"), ".")
			perTrial[trialPart]++
		}
	}
	if len(perTrial) != n {
		t.Errorf("Slurm jobs per trial %v, want %d trials", perTrial, n)
	}
	for id, c := range perTrial {
		if c != 1 {
			t.Errorf("trial %s: %d Slurm jobs, want 1", id, c)
		}
	}
}

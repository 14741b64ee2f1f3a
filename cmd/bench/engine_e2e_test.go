package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engineExperiment writes a benchmark whose trials run as jobs of the
// local engine (detached bench exec-trial processes), each recording its
// start in $marker_dir/started.
func engineExperiment(t *testing.T, trials, slots int, sleep string) string {
	dir := chaosExperiment(t, trials, sleep)
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.LocalEngine",
		"config": {"max_jobs": %d, "poll_interval": "100ms"}}`, slots), 0o644)
	return dir
}

// startedCounts counts how often each trial's script started.
func startedCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, "started"))
	out := map[string]int{}
	for _, l := range strings.Fields(string(data)) {
		out[l]++
	}
	return out
}

// engineJobs returns each trial's engine and number of submissions (trials
// that reused another's result left out).
func engineJobs(t *testing.T, dir, exp string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, COALESCE(engine, ''), COALESCE(engine_submits, 0) FROM trial
		WHERE exp_id = ? AND reused_trial_id IS NULL`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id, n int
		var eng string
		if err := rows.Scan(&id, &eng, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = fmt.Sprintf("%s/%d", eng, n)
	}
	return out
}

// TestLocalEngineKillAndReattach: trials run as detached jobs of the local
// engine; bench is SIGKILLed while jobs run and started again with the same
// command. The new bench re-attaches to the running jobs instead of
// submitting them again: every trial's script ran exactly once, every
// trial was submitted once and is stored once, SUCCEEDED.
func TestLocalEngineKillAndReattach(t *testing.T) {
	const n = 9
	dir := engineExperiment(t, n, 3, "1.5")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "LE", "--no-progress"}
	cmd := startBench(t, dir, tmp, "bench", args...)
	// Kill it once three trials run (and none has finished).
	deadline := time.Now().Add(60 * time.Second)
	for len(startedCounts(t, dir)) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("trials did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before := len(trialRows(t, filepath.Join(dir, "bench.sqlite"), "LE"))
	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	if !strings.Contains(r.stderr, "re-attaching") {
		t.Errorf("the restarted bench did not say it re-attached:\n%s", r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "LE")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d (%d before the restart)", len(rows), n, before)
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
	for id, job := range engineJobs(t, dir, "LE") {
		if job != "local/1" {
			t.Errorf("trial %d: engine job %s, want local/1 (submitted once)", id, job)
		}
	}
}

// TestLocalEngineFailures: a trial whose script fails is FAILED with its
// reason brought back from the far side; a job whose process is killed
// from outside (lost) is relaunched with the same request; a trial that
// exceeds hang_timeout is relaunched then TIMED_OUT.
func TestLocalEngineFailures(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"
if [ "$xv" = 50 ]; then echo "boom on purpose" >&2; exit 3; fi`)
	write(t, dir, "engine.jsonc", `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 1, "poll_interval": "100ms"}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--engine", "engine.jsonc", "--experiment_id", "F", "--no-progress")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the trial failed)\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "F")
	if rows[1] != "FAILED" {
		t.Fatalf("trial 1: %v", rows)
	}
	if s := runBench(t, dir, "show", "1", "--experiment", "F"); !strings.Contains(s.stdout, "boom on purpose") {
		t.Errorf("the far side's output did not come back:\n%s", s.stdout)
	}

	// A hung job: no output for longer than hang_timeout.
	dir = experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep 30`)
	write(t, dir, "engine.jsonc", `{"class": "bench.engines.LocalEngine",
		"config": {"max_jobs": 1, "poll_interval": "100ms", "hang_timeout": "1s", "max_relaunches": 1}}`, 0o644)
	r = runBench(t, dir, "--environment", "env.jsonc", "--engine", "engine.jsonc", "--experiment_id", "H", "--no-progress")
	rows = trialRows(t, filepath.Join(dir, "bench.sqlite"), "H")
	if rows[1] != "TIMED_OUT" {
		t.Fatalf("hung trial: %v\n%s", rows, r.stderr)
	}
	if c := startedCounts(t, dir)["1"]; c != 2 {
		t.Errorf("the hung job ran %d times, want 2 (relaunched once with the same request)", c)
	}
	if jobs := engineJobs(t, dir, "H"); jobs[1] != "local/2" {
		t.Errorf("engine job %s, want local/2", jobs[1])
	}
	reqs, _ := filepath.Glob(filepath.Join(dir, ".bench", "jobs", "H", "*.request.json"))
	if len(reqs) != 2 {
		t.Fatalf("requests %v", reqs)
	}
	a, _ := os.ReadFile(reqs[0])
	b, _ := os.ReadFile(reqs[1])
	if string(a) != string(b) {
		t.Errorf("the relaunch changed the request:\n%s\n%s", a, b)
	}
}

// TestEngineSharedStorageAndPilots, with PostgreSQL storage:
//   - jobs of the local engine store their outcome themselves (the far
//     side reaches the database) and the driver takes it from there: every
//     trial stored once;
//   - bench pilots starts two bench workers as engine jobs; they claim
//     trials the driver queues, and exit when the experiment is over.
func TestEngineSharedStorageAndPilots(t *testing.T) {
	const n = 8
	dir := engineExperiment(t, n, 2, "0.3")
	st, db := freshPostgresStorage(t, dir)
	pg := func(q string) string {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
		return q
	}
	engineShared(t, dir, st, db, pg, n)
}

// TestEngineSharedStorageAndPilotsMySQL: the same with MySQL (MariaDB)
// storage, whose password the jobs get the way the driver does (a globals
// file reading the environment).
func TestEngineSharedStorageAndPilotsMySQL(t *testing.T) {
	const n = 8
	dir := engineExperiment(t, n, 2, "0.3")
	st, db := freshMySQLStorage(t, dir)
	engineShared(t, dir, st, db, func(q string) string { return q }, n, "--globals", "mysql-globals.jsonc")
	// Neither the jobs' requests nor their logs hold the password.
	pw := os.Getenv("BENCH_TEST_MYSQL_PASSWORD")
	err := filepath.WalkDir(filepath.Join(dir, ".bench"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), pw) {
			t.Errorf("%s holds the storage password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// engineShared runs TestEngineSharedStorageAndPilots on the shared storage
// config st (rebind adapts db's placeholders; extra are more options for
// every bench command).
func engineShared(t *testing.T, dir, st string, db *sql.DB, pg func(string) string, n int, extra ...string) {
	r := runBench(t, dir, append([]string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--storage", st, "--experiment_id", "D", "--no-progress"}, extra...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	checkChaos(t, db, pg, "D", n)
	logs, _ := filepath.Glob(filepath.Join(dir, ".bench", "jobs", "D", "*.log"))
	stored := 0
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), "outcome stored") {
			stored++
		}
	}
	if stored != n {
		t.Errorf("%d of %d jobs stored their outcome themselves", stored, n)
	}

	// Pilot workers.
	tmp := t.TempDir()
	common := append([]string{"--environment", "env.jsonc", "--storage", st, "--no-progress", "--no-teardown"}, extra...)
	driver := startBench(t, dir, tmp, "driver", append([]string{"run", "--optimizer", "opt.jsonc", "--experiment_id", "PI",
		"--queue_ahead", "4"}, common...)...)
	time.Sleep(500 * time.Millisecond)
	p := runBench(t, dir, append([]string{"pilots", "--engine", "engine.jsonc", "--count", "2", "--experiment", "PI"}, common...)...)
	if p.code != 0 || strings.Count(p.stdout, "pid") != 2 {
		driver.Process.Kill()
		t.Fatalf("bench pilots: exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	if err := driver.Wait(); err != nil {
		log, _ := os.ReadFile(filepath.Join(tmp, "driver.log"))
		t.Fatalf("driver: %v\n%s", err, log)
	}
	checkChaos(t, db, pg, "PI", n)
	ran := 0
	deadline := time.Now().Add(30 * time.Second)
	for _, i := range []int{1, 2} {
		base := filepath.Join(dir, ".bench", "jobs", "PI", fmt.Sprintf("bench-pilot-PI.pilot%d", i))
		for {
			if _, err := os.Stat(base + ".exit"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pilot %d did not exit after the experiment ended", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
		log, _ := os.ReadFile(base + ".log")
		ran += strings.Count(string(log), "trial finished")
		if code, _ := os.ReadFile(base + ".exit"); strings.TrimSpace(string(code)) != "0" {
			t.Errorf("pilot %d exited with %s:\n%s", i, code, log)
		}
	}
	if ran == 0 {
		t.Errorf("the pilot workers ran no trial")
	}
}

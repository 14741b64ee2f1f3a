package main

import (
	"bytes"
	dbsql "database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeKeepsExploring: a seeded RANDOM experiment is SIGKILLed again
// and again while trials run, and resumed each time with the same
// command. A restarted optimizer must not suggest again the
// configurations that earlier runs suggested (finished, queued or
// interrupted): in the end the n trials hold n distinct configurations,
// none reused from another trial, as a run without kills does (issue 22,
// bug 4: 44 distinct configurations in 60 trials after 15 kills).
func TestResumeKeepsExploring(t *testing.T) {
	const n, kills = 60, 15
	dir := chaosExperiment(t, n, "0.2")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "RK",
		"--num_trial_runners", "4", "--no-progress", "--no-teardown"}
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "started"))
		return strings.Count(string(b), "\n")
	}
	killed := 0
	for i := 0; i < kills; i++ {
		before := starts()
		cmd := startBench(t, dir, tmp, "killed", args...)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		// Kill it once it has started two more trials: trials are then
		// queued and running (no sleep decides when).
		deadline := time.Now().Add(90 * time.Second)
	wait:
		for starts() < before+2 && time.Now().Before(deadline) {
			select {
			case <-exited:
				break wait
			case <-time.After(10 * time.Millisecond):
			}
		}
		select {
		case <-exited: // it finished the experiment first
		default:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			killed++
		}
	}
	if killed < kills/2 {
		t.Fatalf("only %d of %d runs were killed while running trials", killed, kills)
	}
	var out bytes.Buffer
	final := startBenchIn(t, dir, tmp, &out, args...)
	if code := waitExitOrStop(t, final, 5*time.Minute, "the final run", &out); code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "killed.log"))
		t.Fatalf("final run: exit %d\n%s\nlog of the killed runs:\n%s", code, out.String(), log)
	}
	db, err := dbsql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var trials, configs, reused int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT config_id),
		COALESCE(SUM(CASE WHEN reused_trial_id IS NOT NULL THEN 1 ELSE 0 END), 0) FROM trial WHERE exp_id = 'RK'`).
		Scan(&trials, &configs, &reused); err != nil {
		t.Fatal(err)
	}
	if trials != n || configs != n || reused != 0 {
		t.Errorf("after %d kills: %d trials, %d distinct configurations, %d reused; want %d, %d, 0", killed, trials, configs, reused, n, n)
	}
}

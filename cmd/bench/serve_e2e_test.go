package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback address nobody listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitFor polls cond for up to 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readLog(tmp, name string) string {
	b, _ := os.ReadFile(filepath.Join(tmp, name+".log"))
	return string(b)
}

func waitOK(t *testing.T, cmd *exec.Cmd, tmp, name string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, readLog(tmp, name))
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s did not finish:\n%s", name, readLog(tmp, name))
	}
}

// netSetup writes a token file and returns the driver's and the workers'
// arguments.
func netSetup(t *testing.T, dir, addr, exp string) (driver, worker []string) {
	write(t, dir, "token", "tok-"+exp+"-secret\n", 0o600)
	driver = []string{"run", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", exp, "--no-progress",
		"--serve", addr, "--token-file", "token", "--no-local-trials", "--trial_lease", "2s", "--log_level", "INFO"}
	worker = []string{"worker", "--connect", "http://" + addr, "--token-file", "token", "--environment", "env.jsonc",
		"--no-progress", "--log_level", "INFO"}
	return driver, worker
}

// TestNetworkWorkers: a driver serves an experiment over HTTP and runs no
// trial itself; two workers without database access run every trial, each
// stored once. A worker with a wrong token is refused with a clear error,
// and the token is in no log.
func TestNetworkWorkers(t *testing.T) {
	const n = 8
	dir := chaosExperiment(t, n, "0.2")
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, "N")
	driver := startBench(t, dir, tmp, "driver", dargs...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment N") })

	write(t, dir, "wrong", "not-the-token\n", 0o600)
	bad := runBench(t, dir, "worker", "--connect", "http://"+addr, "--token-file", "wrong", "--environment", "env.jsonc")
	if bad.code != 2 || !strings.Contains(bad.stderr, "refused the access token") {
		t.Errorf("a wrong token: exit %d\n%s", bad.code, bad.stderr)
	}

	w1 := startBench(t, dir, tmp, "w1", wargs...)
	w2 := startBench(t, dir, tmp, "w2", wargs...)
	waitOK(t, driver, tmp, "driver")
	waitOK(t, w1, tmp, "w1")
	waitOK(t, w2, tmp, "w2")
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "N")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d", len(rows), n)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, c := range startedCounts(t, dir) {
		if c != 1 {
			t.Errorf("trial %s ran %d times", id, c)
		}
	}
	for _, w := range []string{"w1", "w2"} {
		if !strings.Contains(readLog(tmp, w), "trial finished") {
			t.Errorf("%s ran no trial:\n%s", w, readLog(tmp, w))
		}
	}
	// The driver ran every trial itself, on its network workers' slots:
	// their outcomes came back through its runners, not a scan of storage.
	if d := readLog(tmp, "driver"); !strings.Contains(d, fmt.Sprintf("%d run now", n)) || !strings.Contains(d, "refused a request") {
		t.Errorf("driver log:\n%s", d)
	}
	for _, name := range []string{"driver", "w1", "w2"} {
		if strings.Contains(readLog(tmp, name), "tok-N-secret") || strings.Contains(readLog(tmp, name), "not-the-token") {
			t.Errorf("a token reached %s's log", name)
		}
	}
}

// TestNetworkWorkerKilled: a worker is killed while it runs a trial; once
// its lease runs out the driver's runner for it returns FAILED ("worker
// lost"), and the retry policy (max_retries 1) runs the trial again, as a
// new trial, on the other worker.
func TestNetworkWorkerKilled(t *testing.T) {
	const n = 4
	dir := chaosExperiment(t, n, "2")
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, "K")
	driver := startBench(t, dir, tmp, "driver", append(dargs, "--max_retries", "1")...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment K") })
	doomed := startBench(t, dir, tmp, "doomed", wargs...)
	waitFor(t, "the doomed worker's trial", func() bool { return len(startedCounts(t, dir)) > 0 })
	data, _ := os.ReadFile(filepath.Join(dir, "started"))
	victim, _ := strconv.Atoi(strings.Fields(string(data))[0])
	steady := startBench(t, dir, tmp, "steady", wargs...)
	_ = doomed.Process.Signal(syscall.SIGKILL)
	_ = doomed.Wait()
	waitOK(t, driver, tmp, "driver")
	waitOK(t, steady, tmp, "steady")
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "K")
	if len(rows) != n+1 {
		t.Fatalf("%d trials stored, want %d (one retried)\n%s", len(rows), n+1, readLog(tmp, "driver"))
	}
	for id, st := range rows {
		if want := map[bool]string{true: "FAILED", false: "SUCCEEDED"}[id == victim]; st != want {
			t.Errorf("trial %d: %s, want %s", id, st, want)
		}
	}
	d := readLog(tmp, "driver")
	if !strings.Contains(d, fmt.Sprintf("trial finished trial=%d status=FAILED", victim)) || !strings.Contains(d, "worker lost") {
		t.Errorf("the killed worker's trial did not fail as lost:\n%s", d)
	}
	retried := false
	for id := range rows {
		if id != victim && strings.Contains(readLog(tmp, "steady"), fmt.Sprintf("trial finished trial=%d ", id)) {
			retried = true
		}
	}
	if !retried || startedCounts(t, dir)[strconv.Itoa(victim)] != 1 {
		t.Errorf("trial %d of the killed worker was not retried on the other worker:\n%s", victim, readLog(tmp, "steady"))
	}
}

// TestNetworkDriverRestart: the driver (and its server) is killed while
// workers run trials and started again; the workers reconnect with backoff
// and carry on, and every trial is stored once.
func TestNetworkDriverRestart(t *testing.T) {
	const n = 8
	dir := chaosExperiment(t, n, "0.5")
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, "R")
	driver := startBench(t, dir, tmp, "driver", dargs...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment R") })
	w1 := startBench(t, dir, tmp, "w1", wargs...)
	w2 := startBench(t, dir, tmp, "w2", wargs...)
	waitFor(t, "two finished trials", func() bool {
		return strings.Count(readLog(tmp, "w1")+readLog(tmp, "w2"), "trial finished") >= 2
	})
	_ = driver.Process.Signal(syscall.SIGKILL)
	_ = driver.Wait()
	time.Sleep(time.Second)
	driver = startBench(t, dir, tmp, "driver2", dargs...)
	waitOK(t, driver, tmp, "driver2")
	waitOK(t, w1, tmp, "w1")
	waitOK(t, w2, tmp, "w2")
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "R")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d\n%s", len(rows), n, readLog(tmp, "driver2"))
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	if w := readLog(tmp, "w1") + readLog(tmp, "w2"); !strings.Contains(w, "cannot reach the server") || !strings.Contains(w, "answers again") {
		t.Errorf("the workers did not reconnect:\n%s", w)
	}
}

// TestStandaloneServe: bench serve next to a driver that runs no trial
// (they share the SQLite file) joins the experiment as a worker process
// whose runners are its network workers: the driver queues trials for its
// slots, the network worker runs them, every trial is stored once, and all
// three processes exit once the budget is spent.
func TestStandaloneServe(t *testing.T) {
	const n = 6
	dir := chaosExperiment(t, n, "0.1")
	tmp := t.TempDir()
	addr := freePort(t)
	_, wargs := netSetup(t, dir, addr, "S")
	driver := startBench(t, dir, tmp, "driver", "run", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "S",
		"--no-progress", "--no-local-trials", "--trial_lease", "2s", "--log_level", "INFO", "--max_suggestions", "6")
	waitFor(t, "the experiment", func() bool { return strings.Contains(readLog(tmp, "driver"), `experiment "S"`) })
	server := startBench(t, dir, tmp, "serve", "serve", "--listen", addr, "--token-file", "token", "--experiment", "S",
		"--environment", "env.jsonc", "--no-progress", "--trial_lease", "2s", "--log_level", "INFO")
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "serve"), "serving experiment S") })
	w := startBench(t, dir, tmp, "w1", wargs...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve:\n%s\nworker:\n%s", readLog(tmp, "serve"), readLog(tmp, "w1"))
		}
	})
	waitOK(t, driver, tmp, "driver")
	waitOK(t, server, tmp, "serve")
	waitOK(t, w, tmp, "w1")
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "S")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d\n%s", len(rows), n, readLog(tmp, "serve"))
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, c := range startedCounts(t, dir) {
		if c != 1 {
			t.Errorf("trial %s ran %d times", id, c)
		}
	}
	if s := readLog(tmp, "serve"); !strings.Contains(s, "worker connected") || !strings.Contains(s, "trial result received") {
		t.Errorf("serve log:\n%s", s)
	}
}

package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/services"
)

// The runner builder (launcher/runners.go) on a network worker: what the
// scheduler config asks for (cgroups, device slots, measurements,
// trial_idle_timeout) applies to the trials a `bench worker --connect`
// runs, and the reaper stops a killed worker's trial processes. Each test
// starts a driver that serves its experiment and runs no trial itself,
// and one network worker with the options under test.

// netExperiment writes an experiment of n trials whose run step is
// script (then a score), for a driver and a network worker in one folder.
func netExperiment(t *testing.T, n int, script string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "nw",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"tunable_params": ["g"],
			"const_args": {"marker_dir": "`+dir+`", "gpu_id": "", "cpu_slot": "", "device_slot": ""},
			"shell_env_params": ["xv", "trial_id", "marker_dir", "gpu_id", "cpu_slot", "device_slot"],
			"run": ["./run.sh"],
			"read_results_file": "results.csv"
		}
	}`, 0o644)
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\n"+script+"\nprintf 'metric,value\\nscore,%s\\n' \"$xv\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "RANDOM", "max_suggestions": %d, "seed": 3}}`, n), 0o644)
	return dir
}

// netRun runs the experiment in dir to its end on one network worker
// started with extra options, and returns the worker's log. The driver
// must exit 0 unless failures (some trials fail on purpose: it exits 1).
func netRun(t *testing.T, dir, exp string, failures bool, extra ...string) string {
	t.Helper()
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, exp)
	driver := startBench(t, dir, tmp, "driver", dargs...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment "+exp) })
	w := startBench(t, dir, tmp, "worker", append(wargs, extra...)...)
	if failures {
		done := make(chan error, 1)
		go func() { done <- driver.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
				t.Fatalf("driver: %v\n%s", err, readLog(tmp, "driver"))
			}
		case <-time.After(2 * time.Minute):
			_ = driver.Process.Kill()
			t.Fatalf("the driver did not finish:\n%s", readLog(tmp, "driver"))
		}
	} else {
		waitOK(t, driver, tmp, "driver")
	}
	waitOK(t, w, tmp, "worker")
	return readLog(tmp, "worker")
}

// netResults returns the experiment's trials as `bench results` shows them.
func netResults(t *testing.T, dir, exp string) []map[string]string {
	t.Helper()
	r := runBench(t, dir, "results", "--experiment", exp, "--format", "csv")
	if r.code != 0 {
		t.Fatalf("bench results: exit %d\n%s", r.code, r.stderr)
	}
	return csvRows(t, r.stdout)
}

// TestNetworkWorkerDeviceSlots: a network worker with --gpus and CPU slots
// gives each trial a slot: gpu_id, cpu_slot and device_slot reach the
// script, CUDA_VISIBLE_DEVICES is the slot's GPU, and two trials at once
// never share a slot.
func TestNetworkWorkerDeviceSlots(t *testing.T) {
	const n = 6
	// Each trial records its slot, and holds it a moment so that the two
	// runners overlap.
	dir := netExperiment(t, n, `echo "$gpu_id|$cpu_slot|$device_slot|$CUDA_VISIBLE_DEVICES" > "$marker_dir/slot-$trial_id"
echo "start $device_slot" >> "$marker_dir/slots"; sleep 0.3; echo "end $device_slot" >> "$marker_dir/slots"`)
	write(t, dir, "slots.jsonc", `{"cpu_slots": 2}`, 0o644)
	log := netRun(t, dir, "NS", false, "--gpus", "7,9", "--globals", "slots.jsonc", "--num_trial_runners", "3")
	if !strings.Contains(log, "worker with 2 trial runners") {
		t.Errorf("the worker should run 2 runners (2 device slots for 3 runners):\n%s", log)
	}
	stored := map[string]string{} // trial → the device slot stored with its results
	for _, row := range netResults(t, dir, "NS") {
		if row["status"] != "SUCCEEDED" {
			t.Errorf("trial %s: %s", row["trial"], row["status"])
		}
		stored[row["trial"]] = row["result.bench.device_slot"] + "|" + row["result.bench.gpu_id"]
	}
	for id := 1; id <= n; id++ {
		b, err := os.ReadFile(filepath.Join(dir, "slot-"+strconv.Itoa(id)))
		if err != nil {
			t.Fatalf("trial %d: %v", id, err)
		}
		f := strings.Split(strings.TrimSpace(string(b)), "|")
		if len(f) != 4 {
			t.Fatalf("trial %d wrote %q", id, b)
		}
		gpu, cpu, slot, visible := f[0], f[1], f[2], f[3]
		want := map[string]string{"0": "7", "1": "9"}[slot]
		if want == "" || gpu != want || visible != gpu || cpu != slot {
			t.Errorf("trial %d: gpu_id %q, cpu_slot %q, device_slot %q, CUDA_VISIBLE_DEVICES %q: want slot 0 or 1 with its GPU (7, 9) and CPU slot",
				id, gpu, cpu, slot, visible)
		}
		if got := stored[strconv.Itoa(id)]; got != slot+"|"+gpu {
			t.Errorf("trial %d ran in slot %s (GPU %s), but its results say %q (bench.device_slot|bench.gpu_id)", id, slot, gpu, got)
		}
	}
	// No slot is held by two trials at once.
	b, _ := os.ReadFile(filepath.Join(dir, "slots"))
	held := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, slot, _ := strings.Cut(l, " ")
		if what == "start" && held[slot] {
			t.Errorf("slot %s given to two trials at once:\n%s", slot, b)
		}
		held[slot] = what == "start"
	}
}

// TestNetworkWorkerCgroupsAndMeasurements: a network worker with cgroups
// on and a telemetry interval stores, for each trial, the cgroup's CPU
// (bench.cgroup.*), the environment's built-in measurements
// (bench.nw.run.*) and periodic samples of its processes (bench.cpu_s
// telemetry).
func TestNetworkWorkerCgroupsAndMeasurements(t *testing.T) {
	cgroups := "on"
	if err := services.CgroupAvailable(); err != nil {
		if testenv.Strict() && os.Geteuid() == 0 {
			t.Fatalf("cgroup v2 not usable as root: %v", err)
		}
		// The measurements are still checked; the cgroup results are not.
		t.Logf("cgroup v2 not usable here (%v): checking the measurements without cgroups", err)
		cgroups = "off"
	}
	const n = 2
	// A fixed amount of work, long enough for a few samples.
	dir := netExperiment(t, n, `i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done`)
	log := netRun(t, dir, "NC", false, "--cgroups", cgroups, "--telemetry_interval", "50ms")
	if cgroups == "on" && !strings.Contains(log, "per-runner cgroups: used") {
		t.Errorf("the worker did not say it used cgroups:\n%s", log)
	}
	rows := netResults(t, dir, "NC")
	if len(rows) != n {
		t.Fatalf("%d trials, want %d", len(rows), n)
	}
	for _, row := range rows {
		if row["status"] != "SUCCEEDED" {
			t.Fatalf("trial %s: %s", row["trial"], row["status"])
		}
		keys := []string{"result.bench.nw.run.wall_s", "result.bench.nw.run.cpu_user_s"}
		if cgroups == "on" {
			keys = append(keys, "result.bench.cgroup.cpu_user_s", "result.bench.cgroup.cpu_sys_s")
		}
		for _, k := range keys {
			if row[k] == "" {
				t.Errorf("trial %s has no %s: %v", row["trial"], k, row)
			}
		}
		if cgroups == "on" {
			if cg := atof(t, row["result.bench.cgroup.cpu_user_s"]) + atof(t, row["result.bench.cgroup.cpu_sys_s"]); cg <= 0 {
				t.Errorf("trial %s: cgroup CPU %v", row["trial"], cg)
			}
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var samples, trials int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT trial_id) FROM trial_telemetry WHERE exp_id = 'NC' AND metric_id = ?`,
		services.MetricCPUSeconds).Scan(&samples, &trials); err != nil {
		t.Fatal(err)
	}
	if trials != n {
		t.Errorf("%d samples of %s in %d trials, want some in each of %d", samples, services.MetricCPUSeconds, trials, n)
	}
	if cgroups == "on" {
		left, _ := filepath.Glob("/sys/fs/cgroup/unified/bench-*-runner-*")
		more, _ := filepath.Glob("/sys/fs/cgroup/bench-*-runner-*")
		for _, g := range append(left, more...) {
			// Other tests' benches may hold groups now; this worker's are
			// gone once it exited: none may hold its trials' processes.
			if b, err := os.ReadFile(filepath.Join(g, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				t.Logf("cgroup %s holds processes: %s", g, b)
			}
		}
	}
}

// TestNetworkWorkerIdleTimeout: a trial that prints nothing and writes no
// telemetry for trial_idle_timeout on a network worker ends TIMED_OUT,
// the reason naming the idle timeout, and the experiment goes on (the
// trials with xv >= 50 do not hang, and succeed).
func TestNetworkWorkerIdleTimeout(t *testing.T) {
	const n = 3
	dir := netExperiment(t, n, `if [ "$xv" -lt 50 ]; then touch "$marker_dir/hang-$trial_id"; sleep 120; fi`)
	netRun(t, dir, "NI", true, "--trial_idle_timeout", "1s")
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trows, err := db.Query(`SELECT trial_id, status, COALESCE(failure_reason, '') FROM trial WHERE exp_id = 'NI'`)
	if err != nil {
		t.Fatal(err)
	}
	defer trows.Close()
	hung, count := 0, 0
	for trows.Next() {
		var id int
		var st, reason string
		if err := trows.Scan(&id, &st, &reason); err != nil {
			t.Fatal(err)
		}
		count++
		if _, err := os.Stat(filepath.Join(dir, "hang-"+strconv.Itoa(id))); err != nil {
			if st != "SUCCEEDED" {
				t.Errorf("trial %d did not hang: %s (%s), want SUCCEEDED", id, st, reason)
			}
			continue
		}
		hung++
		if st != "TIMED_OUT" || !strings.Contains(reason, "trial_idle_timeout") {
			t.Errorf("trial %d hung: %s (%q), want TIMED_OUT by trial_idle_timeout", id, st, reason)
		}
	}
	if count != n || hung == 0 || hung == n {
		t.Errorf("%d trials, %d hung: want %d, some of them hung and some not (the optimizer's values changed?)", count, hung, n)
	}
}

// TestNetworkWorkerKilledReapsTrial: a network worker is SIGKILLed while
// its trial runs a background process; the worker's watchdog kills the
// trial's processes (the background one included), so nothing of the
// trial outlives the worker.
func TestNetworkWorkerKilledReapsTrial(t *testing.T) {
	dir := netExperiment(t, 1, `sleep 300 & echo $! > "$marker_dir/bg.pid"; echo $$ > "$marker_dir/fg.pid"; sleep 300`)
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, "NK")
	driver := startBench(t, dir, tmp, "driver", dargs...)
	t.Cleanup(func() {
		_ = driver.Process.Signal(syscall.SIGTERM)
		_ = driver.Wait()
	})
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment NK") })
	w := startBench(t, dir, tmp, "worker", wargs...)
	var pids []int
	waitFor(t, "the trial's processes", func() bool {
		pids = pids[:0]
		for _, f := range []string{"bg.pid", "fg.pid"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return false
			}
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return false
			}
			pids = append(pids, p)
		}
		return true
	})
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d of the trial is not running before the kill", p)
		}
	}
	_ = w.Process.Signal(syscall.SIGKILL)
	_ = w.Wait()
	for _, p := range pids {
		waitFor(t, fmt.Sprintf("process %d of the killed worker's trial to be killed", p), func() bool { return !alive(p) })
	}
	if log := readLog(tmp, "worker"); !strings.Contains(log, "running trial") {
		t.Errorf("worker log:\n%s", log)
	}
}

// alive tells whether process pid runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestEngineJobRunnerBuilder: the far side of an engine job (bench
// exec-trial, here under the local engine) gets its runner from the same
// builder: with cgroups on, each trial that succeeded has its cgroup's
// CPU (the driver takes no cgroups for engine jobs: before, nobody did),
// and trial_idle_timeout ends a hung trial TIMED_OUT (watched on the far
// side now, as well as by the driver through the job's progress).
func TestEngineJobRunnerBuilder(t *testing.T) {
	cgroups := "on"
	if err := services.CgroupAvailable(); err != nil {
		if testenv.Strict() && os.Geteuid() == 0 {
			t.Fatalf("cgroup v2 not usable as root: %v", err)
		}
		t.Logf("cgroup v2 not usable here (%v): checking the idle timeout only", err)
		cgroups = "off"
	}
	const n = 3
	dir := netExperiment(t, n, `if [ "$xv" -lt 50 ]; then touch "$marker_dir/hang-$trial_id"; sleep 120; fi`)
	write(t, dir, "engine.jsonc", `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 1, "poll_interval": "100ms"}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc", "--experiment_id", "EJ",
		"--no-progress", "--trial_idle_timeout", "1s", "--cgroups", cgroups)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rows := netResults(t, dir, "EJ")
	if len(rows) != n {
		t.Fatalf("%d trials, want %d", len(rows), n)
	}
	hung := 0
	for _, row := range rows {
		if _, err := os.Stat(filepath.Join(dir, "hang-"+row["trial"])); err == nil {
			hung++
			if row["status"] != "TIMED_OUT" || !strings.Contains(row["reason"], "trial_idle_timeout") {
				t.Errorf("trial %s hung: %s (%q), want TIMED_OUT by trial_idle_timeout", row["trial"], row["status"], row["reason"])
			}
			continue
		}
		if row["status"] != "SUCCEEDED" {
			t.Errorf("trial %s: %s (%s)", row["trial"], row["status"], row["reason"])
			continue
		}
		if cgroups == "on" && row["result.bench.cgroup.cpu_user_s"] == "" {
			t.Errorf("trial %s has no cgroup results: %v", row["trial"], row)
		}
	}
	if hung == 0 || hung == n {
		t.Errorf("%d of %d trials hung: want some (the optimizer's values changed?)", hung, n)
	}
}

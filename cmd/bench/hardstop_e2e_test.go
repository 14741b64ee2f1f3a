package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/reaper"
)

// Hard stops and hostile inputs (issue 16): files that are not regular
// files, files too large, bench killed with SIGKILL or interrupted twice.
// Each test's processes carry marker_dir=<its folder> in their
// environment, so leftovers finds (and the cleanup kills) whatever they
// leave running, whether or not bench marked them.

// hardExperiment writes a one-trial LocalEnv experiment with the given run
// and teardown lines and extra config keys (JSON members, may be "").
func hardExperiment(t *testing.T, run, teardown []string, extra string) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { killLeftovers(dir) })
	quote := func(lines []string) string {
		var b strings.Builder
		for i, l := range lines {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(l))
		}
		return b.String()
	}
	if extra != "" {
		extra = ",\n" + extra
	}
	if len(teardown) > 0 {
		extra += ",\n\"teardown\": [" + quote(teardown) + "]"
	}
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "hard",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"tunable_params": ["g"],
			"const_args": {"marker_dir": "`+dir+`"},
			"shell_env_params": ["xv", "marker_dir"],
			"run": [`+quote(run)+`],
			"read_results_file": "results.csv"`+extra+`
		}
	}`, 0o644)
	return dir
}

// leftovers returns the live processes whose environment holds
// marker_dir=dir.
func leftovers(dir string) []int {
	want := []byte("marker_dir=" + dir + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(st, ')'); err != nil || i < 0 || i+2 >= len(st) || st[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func killLeftovers(dir string) {
	for _, pid := range leftovers(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitNoLeftovers waits a little for killed processes to go.
func waitNoLeftovers(t *testing.T, dir, when string) {
	t.Helper()
	var left []int
	for i := 0; i < 100; i++ {
		if left = leftovers(dir); len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	var cmds []string
	for _, pid := range left {
		c, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		cmds = append(cmds, strconv.Itoa(pid)+": "+strings.ReplaceAll(string(bytes.TrimRight(c, "\x00")), "\x00", " "))
	}
	t.Errorf("%s: processes of the trial still run:\n%s", when, strings.Join(cmds, "\n"))
}

// startBenchIn starts bench in dir with TMPDIR=tmp and a memory cap (so
// that a test of a bug that eats memory cannot take the machine down).
func startBenchIn(t *testing.T, dir, tmp string, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -v 4000000; exec "$@"`, "sh", benchBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// waitExitOrStop waits up to limit for cmd to exit and returns its exit code;
// past the limit it interrupts it, then kills it, and fails the test.
func waitExitOrStop(t *testing.T, cmd *exec.Cmd, limit time.Duration, what string, out *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-done:
			t.Errorf("%s: still running after %v; the first SIGINT stopped it", what, limit)
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s: still running after %v, and SIGINT did not stop it\n%s", what, limit, out.String())
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

func showTrial(t *testing.T, dir, exp string) string {
	t.Helper()
	r := runBench(t, dir, "show", "1", "--experiment", exp)
	return r.stdout + r.stderr
}

// A results file that is a symlink to /dev/zero: the trial fails at once
// with a clear error; bench neither hangs nor grows.
func TestResultsFileDevZero(t *testing.T) {
	dir := hardExperiment(t, []string{"ln -sf /dev/zero results.csv"}, nil, "")
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, t.TempDir(), &out, "--environment", "env.jsonc", "--experiment_id", "Z", "--no-progress")
	start := time.Now()
	code := waitExitOrStop(t, cmd, 20*time.Second, "bench with a /dev/zero results file", &out)
	if code != 1 {
		t.Errorf("exit code %d, want 1 (the trial failed)\n%s", code, out.String())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "Z"); rows[1] != "FAILED" {
		t.Errorf("trial: %v, want FAILED", rows)
	}
	if show := showTrial(t, dir, "Z"); !strings.Contains(show, "results file") || !strings.Contains(show, "character device, not a regular file") {
		t.Errorf("the reason does not say what is wrong:\n%s", show)
	}
}

// A results file that is a FIFO nobody writes: the trial fails (at the
// latest at the run timeout) instead of blocking.
func TestResultsFileFIFO(t *testing.T) {
	dir := hardExperiment(t, []string{"rm -f results.csv; mkfifo results.csv"}, nil, `"timeouts": {"run": "5s"}`)
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, t.TempDir(), &out, "--environment", "env.jsonc", "--experiment_id", "F", "--no-progress")
	code := waitExitOrStop(t, cmd, 15*time.Second, "bench with a FIFO results file", &out)
	if code != 1 {
		t.Errorf("exit code %d, want 1\n%s", code, out.String())
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "F"); rows[1] != "FAILED" && rows[1] != "TIMED_OUT" {
		t.Errorf("trial: %v, want FAILED or TIMED_OUT", rows)
	}
	if show := showTrial(t, dir, "F"); !strings.Contains(show, "named pipe (FIFO)") {
		t.Errorf("the reason does not say what is wrong:\n%s", show)
	}
}

// A results file over the limit fails the trial with the limit and how to
// raise it; raising it lets the same file through.
func TestResultsFileLimit(t *testing.T) {
	// In single quotes as a whole, the line reaches the shell as written
	// (lines are split into words and joined again, as mlos_bench does).
	dir := hardExperiment(t, []string{`'printf "metric,value\nscore,1\n" > results.csv; head -c 2048 /dev/zero | tr "\0" "#" >> results.csv'`}, nil, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "L", "--no-progress", "--max_results_file_size", "1KiB")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	show := showTrial(t, dir, "L")
	for _, want := range []string{"results file", "over the 1 KiB limit", "max_results_file_size"} {
		if !strings.Contains(show, want) {
			t.Errorf("the reason lacks %q:\n%s", want, show)
		}
	}
}

// An environment config that is a FIFO: a clear error at once, not a
// hang that SIGINT cannot stop. A config over the limit: the limit and
// how to raise it.
func TestConfigFIFOAndLimit(t *testing.T) {
	dir := hardExperiment(t, []string{"true"}, nil, "")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.jsonc"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, t.TempDir(), &out, "--environment", "fifo.jsonc", "--no-progress")
	if code := waitExitOrStop(t, cmd, 10*time.Second, "bench with a FIFO config", &out); code != 2 {
		t.Errorf("exit code %d, want 2\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "fifo.jsonc is a named pipe (FIFO), not a regular file") {
		t.Errorf("the error does not say what is wrong:\n%s", out.String())
	}

	out.Reset()
	cmd = startBenchIn(t, dir, t.TempDir(), &out, "--environment", "env.jsonc", "--no-progress", "--max_config_file_size", "64")
	if code := waitExitOrStop(t, cmd, 10*time.Second, "bench with a small config limit", &out); code != 2 {
		t.Errorf("exit code %d, want 2\n%s", code, out.String())
	}
	for _, want := range []string{"env.jsonc", "over the 64 B limit", "--max_config_file_size"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the error lacks %q:\n%s", want, out.String())
		}
	}
	// bench validate reads with the same rules.
	r := runBench(t, dir, "validate", "fifo.jsonc")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "named pipe") {
		t.Errorf("bench validate of a FIFO: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// bench killed with SIGKILL while a trial runs a background sleep: the
// resumed run kills what the dead bench left running before it runs the
// trial again, and removes its temp folder.
func TestKillLeavesNoOrphans(t *testing.T) {
	// The first attempt leaves a background sleep and waits; the second
	// records whether anything of the first still ran, then succeeds.
	dir := hardExperiment(t, []string{
		`if [ ! -e "$marker_dir/first" ]; then touch "$marker_dir/first"; sleep 3171 & echo "$!" > "$marker_dir/bg"; touch "$marker_dir/started"; sleep 3172; fi`,
		// In single quotes as a whole, a line reaches the shell as
		// written (lines are split into words and joined again, as
		// mlos_bench does).
		`'s=$(cut -d" " -f3 "/proc/$(cat "$marker_dir/bg")/stat" 2>/dev/null); if [ -n "$s" ] && [ "$s" != Z ]; then echo "$s" > "$marker_dir/orphan-alive"; fi'`,
		`'printf "metric,value\nscore,1\n" > results.csv'`,
	}, nil, "")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--experiment_id", "O", "--no-progress"}
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, tmp, &out, args...)
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if i > 1500 {
			t.Fatalf("the trial did not start\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The watchdog would kill the trial's processes at once: kill it
	// first, as the OOM killer might, to test the next bench's sweep.
	dog := watchdogOf(t, cmd.Process.Pid)
	_ = syscall.Kill(dog, syscall.SIGKILL)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(leftovers(dir)) == 0 {
		t.Fatal("the test is broken: the killed bench's trial left nothing running")
	}
	stale, _ := filepath.Glob(filepath.Join(tmp, "bench-hard-*"))
	if len(stale) == 0 {
		t.Fatal("the test is broken: the killed bench left no temp folder")
	}

	out.Reset()
	cmd = startBenchIn(t, dir, tmp, &out, args...)
	if code := waitExitOrStop(t, cmd, 60*time.Second, "the resumed run", &out); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "orphan-alive")); err == nil {
		t.Error("the resumed trial ran while the killed bench's background process still ran")
	}
	waitNoLeftovers(t, dir, "after the resumed run")
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the killed bench's temp folder %s is still there", p)
		}
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "O"); rows[1] != "SUCCEEDED" {
		t.Errorf("trial: %v", rows)
	}
}

// A second Ctrl-C during teardown exits at once, and still kills the
// teardown's processes (a background job included) and removes bench's
// temp folders.
func TestSecondInterruptDuringTeardown(t *testing.T) {
	dir := hardExperiment(t,
		[]string{`touch "$marker_dir/started"; sleep 3173`},
		[]string{`sleep 3174 & touch "$marker_dir/teardown-started"; sleep 3175`}, "")
	tmp := t.TempDir()
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, tmp, &out, "--environment", "env.jsonc", "--experiment_id", "T", "--no-progress")
	waitFile := func(name string) {
		for i := 0; ; i++ {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
			if i > 1500 {
				t.Fatalf("%s did not appear\n%s", name, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFile("started")
	_ = cmd.Process.Signal(os.Interrupt)
	waitFile("teardown-started")
	start := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	if code := waitExitOrStop(t, cmd, 10*time.Second, "bench interrupted twice", &out); code != 130 {
		t.Errorf("exit code %d, want 130\n%s", code, out.String())
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the second Ctrl-C took %v to exit", took)
	}
	waitNoLeftovers(t, dir, "after the second Ctrl-C")
	if left, _ := filepath.Glob(filepath.Join(tmp, "bench-*")); len(left) > 0 {
		t.Errorf("temp folders left behind: %v", left)
	}
}

// A process that a normal run leaves running on purpose (a server started
// by setup, kept with --no-teardown) is not taken for a dead bench's
// orphan by the next run.
func TestNoTeardownKeepsProcessesAcrossRuns(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := hardExperiment(t, []string{
		// In single quotes as a whole, a line reaches the shell as
		// written (lines are split into words and joined again, as
		// mlos_bench does).
		`'if [ ! -e "$marker_dir/bg" ]; then sleep 3176 >/dev/null 2>&1 & echo "$!" > "$marker_dir/bg"; fi'`,
		`'printf "metric,value\nscore,1\n" > results.csv'`,
	}, []string{`kill "$(cat "$marker_dir/bg")"`}, "")
	tmp := t.TempDir()
	for i, exp := range []string{"N1", "N2"} {
		var out bytes.Buffer
		cmd := startBenchIn(t, dir, tmp, &out, "--environment", "env.jsonc", "--experiment_id", exp, "--no-progress", "--no-teardown")
		if code := waitExitOrStop(t, cmd, 60*time.Second, "bench --no-teardown", &out); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i+1, code, out.String())
		}
	}
	if left := leftovers(dir); len(left) != 1 {
		t.Errorf("the server kept by --no-teardown: %v running, want 1", left)
	}
}

// watchdogOf returns the pid of the watchdog of the bench process pid
// (`/bin/sh -c SCRIPT bench __reaper-watchdog o<boot>.<pid>.<start>`, or,
// once it sweeps, `bench __reaper-watchdog o<boot>.<pid>.<start>`).
func watchdogOf(t *testing.T, pid int) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			p, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			c, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			args := strings.Split(string(bytes.TrimRight(c, "\x00")), "\x00")
			if n := len(args); n >= 3 && args[n-2] == reaper.WatchdogArg && strings.Contains(args[n-1], "."+strconv.Itoa(pid)+".") {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("bench %d has no watchdog", pid)
	return 0
}

// waitFileIn waits for dir/name to appear.
func waitFileIn(t *testing.T, dir, name string, out *bytes.Buffer) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return
		}
		if i > 3000 {
			t.Fatalf("%s did not appear\n%s", name, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bench killed with SIGKILL in the middle of a trial: its watchdog kills
// the trial's processes (a background job and a setsid one included) at
// once, not when the next bench starts.
func TestKilledBenchsWatchdogStopsTheTrial(t *testing.T) {
	for _, worker := range []bool{false, true} {
		name := "run"
		if worker {
			name = "worker"
		}
		t.Run(name, func(t *testing.T) {
			dir := hardExperiment(t, []string{
				`'sleep 3177 >/dev/null 2>&1 & setsid sleep 3178 >/dev/null 2>&1 & touch "$marker_dir/started"; sleep 3179'`,
			}, nil, "")
			tmp := t.TempDir()
			// A mark of this test's own: other bench processes on the
			// machine (other tests) would reap the trial's processes
			// too, and hide a watchdog that does not.
			t.Setenv("BENCH_OWNER_VAR", "BENCH_OWNER_WATCHDOG_TEST")
			args := []string{"--environment", "env.jsonc", "--experiment_id", "W", "--no-progress"}
			var out bytes.Buffer
			if worker {
				// A driver that only queues (no local trials), then a
				// worker that runs the trial.
				var dout bytes.Buffer
				drv := startBenchIn(t, dir, tmp, &dout, append(args, "--no-local-trials")...)
				t.Cleanup(func() { _ = drv.Process.Kill(); _ = drv.Wait() })
				args = []string{"--environment", "env.jsonc", "--experiment", "W", "--no-progress"}
				args = append([]string{"worker"}, args...)
			}
			var cmd *exec.Cmd
			var exited chan struct{}
			for try := 0; ; try++ {
				// A worker started before the driver stored the
				// experiment exits: start it again.
				out.Reset()
				cmd = startBenchIn(t, dir, tmp, &out, args...)
				exited = make(chan struct{})
				go func(c *exec.Cmd, ch chan struct{}) { _ = c.Wait(); close(ch) }(cmd, exited)
				for {
					if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
						break
					}
					select {
					case <-exited:
					case <-time.After(10 * time.Millisecond):
						continue
					}
					break
				}
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
				if try > 100 {
					t.Fatalf("the trial did not start\n%s", out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(leftovers(dir)) < 3 {
				t.Fatalf("the test is broken: the trial's processes are not all running: %v", leftovers(dir))
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			killed := time.Now()
			// Poll up to a bound that load cannot reach; the watchdog
			// takes milliseconds.
			for len(leftovers(dir)) > 0 && time.Since(killed) < 10*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			took := time.Since(killed)
			waitNoLeftovers(t, dir, "after bench was killed")
			t.Logf("the trial's processes were gone %v after the SIGKILL", took.Round(time.Millisecond))
			// The promise is 2 s (the watchdog takes milliseconds; the
			// next bench's sweep, which also kills them, may come much
			// later).
			if took > 2*time.Second {
				t.Errorf("the trial's processes ran %v after bench was killed, want under 2 s", took.Round(time.Millisecond))
			}
		})
	}
}

// Background jobs of a trial that ended normally (`sleep &`, a setsid
// sleep, `yes > file &`) do not outlive the experiment: after teardown,
// nothing bench marked runs, and nothing is recorded as left on purpose.
func TestNormalExitStopsBackgroundJobs(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := hardExperiment(t, []string{
		`'sleep 3180 >/dev/null 2>&1 & setsid sleep 3181 >/dev/null 2>&1 & yes > /dev/null &'`,
		`'printf "metric,value\nscore,1\n" > results.csv'`,
	}, []string{`true`}, "")
	tmp := t.TempDir()
	var out bytes.Buffer
	cmd := startBenchIn(t, dir, tmp, &out, "--environment", "env.jsonc", "--experiment_id", "B", "--no-progress")
	if code := waitExitOrStop(t, cmd, 60*time.Second, "bench", &out); code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	waitNoLeftovers(t, dir, "after a normal exit")
	if recs, _ := filepath.Glob(filepath.Join(cache, "bench", "released", "*")); len(recs) > 0 {
		t.Errorf("recorded as left on purpose: %v", recs)
	}
}

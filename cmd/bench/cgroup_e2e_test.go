package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/services"
)

// TestCgroupAccounting: with --cgroups on, a trial's CPU includes a daemon
// that double-forked away from the trial's shell (wait4's rusage cannot
// see it): the run burns about 0.6 s of CPU in such a daemon, and
// bench.cgroup.cpu_user_s + cpu_sys_s reports it while the per-phase
// bench.e2e.run.cpu_* (wait4) does not. The groups are removed at the end.
func TestCgroupAccounting(t *testing.T) {
	if err := services.CgroupAvailable(); err != nil {
		if testenv.Strict() && os.Geteuid() == 0 {
			t.Fatalf("cgroup v2 not usable as root: %v", err)
		}
		t.Skipf("cgroup v2 not usable here: %v", err)
	}
	// The daemon: a subshell in the background of a subshell, busy with a
	// fixed amount of work, which writes its own CPU time (the shell's
	// times) when done; the run waits for its marker file, not with wait.
	dir := experiment(t, `( ( i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; times > "$marker_dir/daemon-times"; touch "$marker_dir/daemon-done" ) & )
while [ ! -e "$marker_dir/daemon-done" ]; do sleep 0.05; done`)
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "CG", "--no-progress", "--cgroups", "on")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "per-runner cgroups: used") {
		t.Errorf("bench did not say it used cgroups:\n%s", r.stderr)
	}
	res := csvRows(t, runBench(t, dir, "results", "--format", "csv").stdout)
	if len(res) != 1 {
		t.Fatalf("results: %v", res)
	}
	cg := atof(t, res[0]["result.bench.cgroup.cpu_user_s"]) + atof(t, res[0]["result.bench.cgroup.cpu_sys_s"])
	w := atof(t, res[0]["result.bench.e2e.run.cpu_user_s"]) + atof(t, res[0]["result.bench.e2e.run.cpu_sys_s"])
	// The daemon's own CPU: "0m0.240000s 0m0.010000s" (user, sys).
	times, err := os.ReadFile(filepath.Join(dir, "daemon-times"))
	if err != nil {
		t.Fatal(err)
	}
	daemon := 0.0
	for _, f := range strings.Fields(strings.SplitN(string(times), "\n", 2)[0]) {
		var m, s float64
		if _, err := fmt.Sscanf(f, "%fm%fs", &m, &s); err == nil {
			daemon += 60*m + s
		}
	}
	if daemon < 0.1 {
		t.Fatalf("the daemon reported %.3f s of CPU (%q): the test needs more work", daemon, times)
	}
	if cg < 0.9*daemon {
		t.Errorf("cgroup CPU %.3f s, want at least the daemon's %.3f s", cg, daemon)
	}
	if w > 0.5*daemon {
		t.Errorf("wait4 CPU %.3f s should miss the daemon's %.3f s (cgroup %.3f s)", w, daemon, cg)
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/unified/bench-*-runner-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/bench-*-runner-*")
	if len(left)+len(more) > 0 {
		t.Errorf("cgroups left behind: %v %v", left, more)
	}
	// memory.peak needs the memory controller enabled for the groups (not on
	// every machine).
	if _, ok := res[0]["result.bench.cgroup.max_rss_mb"]; ok && res[0]["result.bench.cgroup.max_rss_mb"] != "" {
		t.Logf("peak memory from the cgroup: %s MB", res[0]["result.bench.cgroup.max_rss_mb"])
	}
}

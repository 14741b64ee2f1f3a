package local

import (
	"runtime"
	"testing"
	"time"

	"github.com/benchtune/bench/services"
)

// TestLocalExecUsage runs programs whose cost is known and checks the
// rusage each line reports: a sleep uses no CPU, a busy loop uses user
// CPU, and a program that touches 200 MiB peaks above that, including when
// the shell runs it as a child (the rusage covers waited-for
// descendants).
func TestLocalExecUsage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rusage is measured on Linux only")
	}
	if testing.Short() {
		t.Skip("slow: burns CPU and memory")
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{
		Dir: t.TempDir(),
		Lines: []string{
			"sleep 0.5",
			// The double quotes keep the single quotes for the shell
			// (lines are split as mlos_bench splits them).
			`python3 -c "'import os
t = os.times().user
while os.times().user - t < 0.6: pass'"`,
			// Not exec'd by the shell: python3 runs as the shell's child.
			`true; python3 -c "'b = bytearray(200 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1'"; true`,
		},
	})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	sleep, busy, mem := res.Lines[0], res.Lines[1], res.Lines[2]
	// Only what load cannot break: a sleep lasts at least its time (a
	// busy machine can make it last longer, so there is no upper bound),
	// uses next to no CPU, and a single-threaded busy loop's wall time is
	// at least its CPU time.
	if sleep.Duration < 450*time.Millisecond {
		t.Errorf("sleep 0.5: wall %v", sleep.Duration)
	}
	if busy.Duration < busy.UserCPU {
		t.Errorf("busy loop: wall %v < user CPU %v", busy.Duration, busy.UserCPU)
	}
	if cpu := sleep.UserCPU + sleep.SysCPU; cpu >= 100*time.Millisecond {
		t.Errorf("sleep 0.5: CPU %v", cpu)
	}
	if busy.UserCPU < 500*time.Millisecond {
		t.Errorf("busy loop: user CPU %v (sys %v)", busy.UserCPU, busy.SysCPU)
	}
	if mem.MaxRSSBytes < 200<<20 {
		t.Errorf("200 MiB touched: max RSS %d bytes", mem.MaxRSSBytes)
	}
	if sleep.MaxRSSBytes <= 0 || sleep.MaxRSSBytes >= 100<<20 {
		t.Errorf("sleep: max RSS %d bytes", sleep.MaxRSSBytes)
	}
}

package reaper

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startMarked starts a shell that leaves a background sleep behind, with
// the given mark, and returns the shell's and the sleep's pids.
// TestMain marks this package's test processes with a variable of their
// own: bench processes of other packages' tests, running at the same time,
// reap the real one and would kill these test processes first.
func TestMain(m *testing.M) {
	EnvVar = "BENCH_OWNER_REAPER_TEST"
	for env, helper := range testHelpers {
		if os.Getenv(env) != "" {
			os.Exit(helper())
		}
	}
	os.Exit(m.Run())
}

// testHelpers are what the test binary runs instead of the tests when it
// is re-exec'd as a helper process with the variable set.
var testHelpers = map[string]func() int{}

func startMarked(t *testing.T, mark string) (sh, bg int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $! > "$1/bg"; exec sleep 300`, "sh", dir)
	cmd.Env = append(os.Environ(), EnvVar+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile(dir + "/bg")
		if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			t.Cleanup(func() { _ = syscall.Kill(n, syscall.SIGKILL) })
			// Wait for the shell's exec, so that its environ shows the mark.
			time.Sleep(50 * time.Millisecond)
			return cmd.Process.Pid, n
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the background process did not start")
	return 0, 0
}

func running(pid int) bool {
	state, _, _, err := stat(pid)
	return err == nil && state != 'Z' && state != 'X'
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if !slices.ContainsFunc(pids, running) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("processes %v still run", pids)
}

func TestKillStaleKillsOnlyTheDeadOwnersProcesses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	me, err := Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	if !me.Alive() {
		t.Fatal("this process must count as alive")
	}
	// A dead owner: a process that ran and ended.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Owner{Boot: me.Boot, PID: c.Process.Pid, Start: 1}
	otherBoot := Owner{Boot: "00000000", PID: me.PID, Start: me.Start}
	if otherBoot.Boot == me.Boot {
		otherBoot.Boot = "00000001"
	}
	if dead.Alive() || otherBoot.Alive() {
		t.Fatal("a dead owner counts as alive")
	}
	deadSh, deadBg := startMarked(t, dead.String())
	bootSh, bootBg := startMarked(t, otherBoot.String())
	liveSh, liveBg := startMarked(t, me.String())

	k, err := KillStale()
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, deadSh, deadBg, bootSh, bootBg)
	// A group leader's members die with it, so they may not be reported.
	for _, p := range []int{deadSh, bootSh} {
		if !slices.Contains(k.PIDs, p) {
			t.Errorf("KillStale did not report %d: %v", p, k.PIDs)
		}
	}
	for _, o := range []Owner{dead, otherBoot} {
		if !slices.Contains(k.Owners, o.String()) {
			t.Errorf("KillStale did not report the owner %s: %v", o, k.Owners)
		}
	}
	if !running(liveSh) || !running(liveBg) {
		t.Fatal("KillStale killed a live owner's processes")
	}
	if _, err := KillOwn(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, liveSh, liveBg)
}

func TestOwnerString(t *testing.T) {
	o := Owner{Boot: "9d9f592e", PID: 42, Start: 1234}
	got, ok := ParseOwner(o.String())
	if !ok || got != o {
		t.Fatalf("ParseOwner(%q) = %v, %v", o.String(), got, ok)
	}
	for _, bad := range []string{"", "o", "x9d9f592e.1.2", "o9d9f592.1.2", "o9d9f592e.0.2", "o9d9f592e.1", "oZZZZZZZZ.1.2"} {
		if _, ok := ParseOwner(bad); ok {
			t.Errorf("ParseOwner(%q) accepted", bad)
		}
	}
	if got := Unmarked([]string{"A=1", EnvVar + "=x", "B=2"}); fmt.Sprint(got) != "[A=1 B=2]" {
		t.Errorf("Unmarked: %v", got)
	}
}

// The processes of an owner that exited normally and released them (a
// server kept with --no-teardown) are left alone; the record goes with
// them.
func TestKillStaleLeavesReleasedProcesses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	me, err := Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Owner{Boot: me.Boot, PID: c.Process.Pid, Start: 2}
	sh, bg := startMarked(t, dead.String())
	if err := os.MkdirAll(StateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StateDir()+"/"+dead.String(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := KillStale(); err != nil || slices.Contains(k.PIDs, sh) {
		t.Fatalf("KillStale killed released processes: %v %v", k, err)
	}
	if !running(sh) || !running(bg) || !Released(dead.String()) {
		t.Fatal("the released processes or their record are gone")
	}
	_ = syscall.Kill(-sh, syscall.SIGKILL)
	_ = syscall.Kill(bg, syscall.SIGKILL)
	waitGone(t, sh, bg)
	if _, err := KillStale(); err != nil {
		t.Fatal(err)
	}
	if Released(dead.String()) {
		t.Error("the record outlives the processes")
	}
	// Release with nothing running records nothing.
	if err := Release(); err != nil || Released(me.String()) {
		t.Errorf("Release with no process left: %v", err)
	}
}

package reaper

import (
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The watchdog's body: when its bench's pipe closes, it kills what that
// bench marked (and nothing else); told Keep first, it kills nothing.
func TestWatchKillsTheOwnersProcessesWhenThePipeCloses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	me, err := Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := Owner{Boot: me.Boot, PID: c.Process.Pid, Start: 3}
	other := Owner{Boot: me.Boot, PID: c.Process.Pid, Start: 4}
	sh, bg := startMarked(t, gone.String())
	otherSh, otherBg := startMarked(t, other.String())

	r, w := io.Pipe()
	done := make(chan Killed, 1)
	go func() {
		k, err := Watch(gone.String(), r)
		if err != nil {
			t.Error(err)
		}
		done <- k
	}()
	select {
	case <-done:
		t.Fatal("the watchdog swept before its pipe closed")
	case <-time.After(50 * time.Millisecond):
	}
	if !running(sh) || !running(bg) {
		t.Fatal("the owner's processes died before the pipe closed")
	}
	w.Close()
	<-done
	waitGone(t, sh, bg)
	if !running(otherSh) || !running(otherBg) {
		t.Error("the watchdog killed another owner's processes")
	}

	// Keep: left on purpose.
	kept, keptBg := startMarked(t, gone.String())
	if k, err := Watch(gone.String(), strings.NewReader(string(keepByte))); err != nil || len(k.PIDs) > 0 {
		t.Fatalf("Watch after Keep killed %v (%v)", k.PIDs, err)
	}
	if !running(kept) || !running(keptBg) {
		t.Error("Watch after Keep killed the kept processes")
	}
	// Done: the normal exit killed what it marked; nothing is swept (a
	// process still marked here shows that no sweep ran).
	if k, err := Watch(gone.String(), strings.NewReader(string(doneByte))); err != nil || len(k.PIDs) > 0 {
		t.Fatalf("Watch after Done killed %v (%v)", k.PIDs, err)
	}
	if !running(kept) || !running(keptBg) {
		t.Error("Watch after Done swept")
	}
	if _, err := Watch("not a mark", strings.NewReader("")); err == nil {
		t.Error("Watch accepted a malformed mark")
	}
}

// A zombie (ended, not yet reaped by its parent) is not alive: the bench
// it names is dead, and its marked processes are stale.
func TestZombieIsNotAlive(t *testing.T) {
	me, err := Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	c := exec.Command("sleep", "0.05")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	_, _, start, err := stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	o := Owner{Boot: me.Boot, PID: pid, Start: start}
	if !o.Alive() {
		t.Fatal("a running process is not alive")
	}
	// Not waited for: it stays a zombie once it exits.
	for i := 0; ; i++ {
		state, _, _, err := stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if state == 'Z' {
			break
		}
		if i > 3000 {
			t.Fatal("the child did not become a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if o.Alive() {
		t.Error("a zombie counts as alive")
	}
	_ = c.Wait()
}

// A process Start started is killed by the exit paths by its pid, with its
// process group, even while its mark does not show in /proc (here it has
// none at all: Start no longer waits for the mark to show); one that has
// been waited for (Done) is forgotten.
func TestExitKillsStartedProcessesByPID(t *testing.T) {
	t.Cleanup(func() {
		exitMu.Lock()
		exiting = false
		exitMu.Unlock()
	})
	quick := exec.Command("true")
	if err := Start(quick, quick.Start); err != nil {
		t.Fatal(err)
	}
	_ = quick.Wait()
	Done(quick)

	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & sleep 30; wait")
	cmd.Env = Unmarked(cmd.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := Start(cmd, cmd.Start); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	startedMu.Lock()
	_, known := started[pid]
	_, stale := started[quick.Process.Pid]
	startedMu.Unlock()
	if !known || stale {
		t.Fatalf("registry: started process known %v, waited-for process still known %v", known, stale)
	}
	k, err := Finish(false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.PIDs, pid) {
		t.Errorf("Finish killed %v, not the started process %d", k.PIDs, pid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the started process outlived the exit")
	}
	Done(cmd)
	// Its group (the background sleep) is gone too.
	for i := 0; syscall.Kill(-pid, 0) == nil; i++ {
		if i > 3000 {
			t.Fatal("the started process's group outlived the exit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := Start(exec.Command("true"), func() error { return nil }); err != ErrExiting {
		t.Errorf("Start after the exit: %v, want ErrExiting", err)
	}
}

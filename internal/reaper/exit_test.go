package reaper

import (
	"io"
	"os/exec"
	"strings"
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

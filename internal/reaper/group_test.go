package reaper

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestGroupLiveIgnoresZombies: a process group whose only member ended
// but was not reaped (a zombie) is not live; while the member runs it is.
func TestGroupLiveIgnoresZombies(t *testing.T) {
	if _, err := Self(); err != nil {
		t.Skip("no /proc:", err)
	}
	c := exec.Command("sleep", "0.2")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	defer c.Wait()
	if !GroupLive(pid) {
		t.Fatal("the group of a running process is not live")
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
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("kill(-pgid, 0) on a zombie's group: %v (the case this guards against)", err)
	}
	if GroupLive(pid) {
		t.Error("a group of zombies counts as live")
	}
	if GroupLive(1 << 30) {
		t.Error("a group with no member counts as live")
	}
}

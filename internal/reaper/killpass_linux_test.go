package reaper

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forkingTreeEnv makes the test binary, re-exec'd, run forkingTree.
const forkingTreeEnv = "BENCH_REAPER_TEST_FORKING_TREE"

// forkingTreeScript keeps forking while the pass runs: loops that start
// `setsid sleep` (two execs each, the second after leaving the group), in
// the tree's group and in a session of their own, and a loop of double
// forks whose grandchildren are orphans from birth. Each loop stops after
// 150 (900 sleeps at most: the machine's pids are shared).
const forkingTreeScript = `
n=150
for i in 1 2; do
	( j=0; while [ $j -lt $n ]; do setsid sleep 300 & j=$((j+1)); done; wait ) &
	setsid sh -c 'j=0; while [ $j -lt $0 ]; do setsid sleep 300 & j=$((j+1)); done; wait' $n &
	( j=0; while [ $j -lt $n ]; do sh -c 'setsid sleep 300 &'; j=$((j+1)); done; wait ) &
done
wait`

func init() { testHelpers[forkingTreeEnv] = forkingTree }

// A tree that keeps forking setsid'd children while the kill pass runs:
// after the pass, nothing of it may run. The check is exact: the test runs
// in a helper process that is a child subreaper, so every descendant,
// orphaned or not, in an exec or not, stays its descendant, and a
// descendant that is alive after the pass is a survivor.
func TestKillPassStopsATreeThatKeepsForking(t *testing.T) {
	if _, err := Self(); err != nil {
		t.Skip("no /proc:", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), forkingTreeEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "forking tree: ok") {
		t.Fatalf("the helper said:\n%s", out.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

// forkingTree is the helper's body: it starts the tree, waits until it has
// started 20 sleeps, runs the kill pass, and says whether any descendant
// is alive afterwards (killing and reaping them all either way).
func forkingTree() int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Println("PR_SET_CHILD_SUBREAPER:", err)
		return 1
	}
	me, err := Self()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	mark := me.String()
	cmd := exec.Command("/bin/sh", "-c", forkingTreeScript)
	cmd.Env = append(os.Environ(), EnvVar+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer killDescendants()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if n := len(descendants("sleep")); n >= 20 {
			break
		}
		if time.Since(start) > time.Minute {
			fmt.Println("the tree did not start 20 sleeps in a minute")
			return 1
		}
	}
	t0 := time.Now()
	k, err := killPass(func(m string) bool { return m == mark })
	took := time.Since(t0)
	if err != nil {
		fmt.Println("kill pass:", err)
		return 1
	}
	// What the pass killed may still be ending (in the kernel's exit path,
	// with an empty command line); a survivor does not end.
	dying := len(descendants(""))
	var left []string
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if left = descendants(""); len(left) == 0 || time.Since(start) > 5*time.Second {
			break
		}
	}
	if len(left) > 0 {
		fmt.Printf("forking tree: %d processes survived the pass (killed %d):\n%s\n", len(left), len(k.PIDs), strings.Join(left, "\n"))
		return 1
	}
	fmt.Printf("forking tree: ok: killed %d processes in %v (%d still ending when it returned)\n", len(k.PIDs), took.Round(time.Millisecond), dying)
	return 0
}

// descendants lists this process's live descendants whose command line
// starts with prefix ("pid: cmdline"; a process in an exec shows an empty
// one), reaping the zombies among its children first.
func descendants(prefix string) []string {
	for {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); err != nil || pid <= 0 {
			break
		}
	}
	parent := map[int]int{}
	state := map[int]byte{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ps, err := readStat(pid); err == nil {
			parent[pid], state[pid] = ps.ppid, ps.state
		}
	}
	me := os.Getpid()
	var out []string
	for pid, st := range state {
		if st == 'Z' || st == 'X' {
			continue
		}
		for p, hops := parent[pid], 0; p > 1 && hops < 1000; p, hops = parent[p], hops+1 {
			if p == me {
				c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				cl := strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
				if strings.HasPrefix(cl, prefix) {
					out = append(out, fmt.Sprintf("%d: %q (state %c)", pid, cl, st))
				}
				break
			}
		}
	}
	return out
}

// killDescendants kills and reaps every descendant (the helper is their
// subreaper): what a failed pass left is not left on the machine.
func killDescendants() {
	for i := 0; i < 1000; i++ {
		left := descendants("")
		if len(left) == 0 {
			return
		}
		for _, l := range left {
			if pid, err := strconv.Atoi(l[:strings.IndexByte(l, ':')]); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

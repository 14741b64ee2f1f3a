package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/reaper"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/local"
)

// teardownHelperEnv makes the test binary, re-exec'd, a small bench that
// runs a teardown on the first SIGINT (teardownHelper).
const teardownHelperEnv = "BENCH_TEST_TEARDOWN_HELPER"

// teardownHelper is bench's exit paths in miniature, with bench's own
// pieces: interruptContext (the second SIGINT kills and exits), a teardown
// of LocalExecService lines that leave setsid and background sleeps, then
// the normal exit (launcher.Guard.Finish; kept when the variable says
// "keep", as with --no-teardown). It says "ready" and "teardown" on stdout.
func teardownHelper() int {
	ctx, stop := interruptContext(os.Stderr)
	defer stop()
	kept := os.Getenv(teardownHelperEnv) == "keep"
	var guard *launcher.Guard // no watchdog: the test binary is not bench
	defer func() { guard.Finish(kept) }()
	svc, err := local.NewLocalExec(local.Config{}, local.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done() // the trial, stopped by the first SIGINT
	// From a few milliseconds to a few tens: the normal exit comes
	// before, during and after the second Ctrl-C.
	var lines []string
	n, _ := strconv.Atoi(os.Getenv("teardown_groups"))
	for i := 0; i < n; i++ {
		lines = append(lines, "setsid sleep 3191 >/dev/null 2>&1 &", "sleep 3192 >/dev/null 2>&1 &", "sleep 0.002")
	}
	fmt.Println("teardown")
	_, _ = svc.LocalExec(context.WithoutCancel(ctx), services.ExecRequest{Lines: lines, Verbatim: true,
		Env: map[string]string{"marker_dir": os.Getenv("marker_dir")}})
	return 0
}

// A second Ctrl-C 0-15 ms after teardown starts: whether the kill-and-exit
// or the normal exit (which kills, or records what it keeps) comes first,
// no teardown process is left running, and none is recorded as left on
// purpose unless bench exited normally keeping them. 200 tries.
func TestSecondInterruptRacesTeardown(t *testing.T) {
	if _, err := reaper.Self(); err != nil {
		t.Skip("no /proc:", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	tries := 200
	if testing.Short() {
		tries = 40
	}
	exits := map[int]int{}
	for i := 0; i < tries; i++ {
		dir := t.TempDir()
		mode := "kill"
		if i%2 == 1 {
			mode = "keep"
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), teardownHelperEnv+"="+mode, "marker_dir="+dir, "XDG_CACHE_HOME="+cache,
			"teardown_groups="+strconv.Itoa(1+i/2%6))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		expect := func(want string) {
			if !lines.Scan() || lines.Text() != want {
				_ = cmd.Process.Kill()
				t.Fatalf("try %d: helper said %q, want %q", i, lines.Text(), want)
			}
		}
		expect("ready")
		_ = cmd.Process.Signal(os.Interrupt)
		expect("teardown")
		time.Sleep(time.Duration(rand.IntN(16)) * time.Millisecond)
		_ = cmd.Process.Signal(os.Interrupt)
		err = cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
				// The second Ctrl-C came once the normal exit had finished
				// (Finish ran, then the handler was removed): the signal's
				// default action ended the process. That is the normal exit.
				code = 0
			}
		} else if err != nil {
			t.Fatal(err)
		}
		exits[code]++
		recorded, _ := filepath.Glob(filepath.Join(cache, "bench", "released", fmt.Sprintf("o*.%d.*", cmd.Process.Pid)))
		switch {
		case code == 130 || (code == 0 && mode == "kill"):
			// Killed at the second Ctrl-C, or at the normal exit.
			waitNoLeftovers(t, dir, fmt.Sprintf("try %d (%s, exit %d)", i, mode, code))
			if len(recorded) > 0 {
				t.Errorf("try %d (%s, exit %d): recorded as left on purpose: %v", i, mode, code, recorded)
			}
		case code == 0 && mode == "keep":
			// The normal exit came first and kept them on purpose.
			if len(recorded) == 0 && len(leftovers(dir)) > 0 {
				t.Errorf("try %d: processes kept without a record", i)
			}
		default:
			t.Errorf("try %d (%s): exit code %d", i, mode, code)
		}
		killLeftovers(dir)
		for _, r := range recorded {
			_ = os.Remove(r)
		}
		if t.Failed() {
			t.Logf("the helper's stderr:\n%s", stderr.String())
			break
		}
	}
	t.Logf("exit codes over %d tries: %v", tries, exits)
}

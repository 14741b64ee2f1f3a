package reaper

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// WatchdogArg is the hidden first argument that makes the bench binary a
// watchdog: `bench __reaper-watchdog <mark>`, its stdin the read end of a
// pipe that only its bench holds open.
const WatchdogArg = "__reaper-watchdog"

// keepByte, written to the pipe, tells the watchdog that its bench exited
// normally leaving processes running on purpose (--no-teardown).
const keepByte = 'k'

// Watchdog is the write end of the pipe to this process's watchdog: a
// small process that outlives a SIGKILLed bench by the time it takes to
// kill every process that bench marked. The kernel closes the pipe when
// bench dies, however it dies; the watchdog then sweeps. (The pipe is
// close-on-exec: the trials' processes do not hold it open.)
type Watchdog struct {
	w   *os.File
	cmd *exec.Cmd
}

// watchdogShell is the watchdog while its bench runs: a shell that waits
// for the pipe to close and, unless bench said Keep or Done, execs the
// bench binary as `bench __reaper-watchdog MARK` (Watch) to sweep. Bench
// runs its package initialisation (the schemas, tens of milliseconds of
// CPU) only when there is something to sweep, not beside every start
// ($0: the binary's path, $1 and $2: the watchdog's arguments; fd 3, when
// open, the binary as bench started it, so that a binary replaced or
// removed meanwhile (go run) still runs). The terminal's signals are
// ignored, in the shell and the bench it execs.
const watchdogShell = `trap '' INT HUP PIPE QUIT TSTP
IFS= read -r said
case $said in *[` + string(keepByte) + string(doneByte) + `]*) exit 0 ;; esac
if [ -r /proc/self/fd/3 ]; then exec /proc/self/fd/3 "$1" "$2"; fi
exec "$0" "$1" "$2"`

// StartWatchdog starts this process's watchdog (watchdogShell, then exe,
// the bench binary, should bench die). It runs in a session of its own (a
// Ctrl-C on the terminal does not reach it), without the owner mark (no
// sweep kills it), with its output discarded (it holds no pipe a caller
// waits on).
func StartWatchdog(exe string) (*Watchdog, error) {
	me, err := Self()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogShell, exe, WatchdogArg, me.String())
	cmd.Stdin = r
	cmd.Env = Unmarked(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if bin, err := os.Open(exe); err == nil {
		defer bin.Close()
		cmd.ExtraFiles = []*os.File{bin} // fd 3
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	go func() { _ = cmd.Wait() }() // it ends when the pipe closes
	return &Watchdog{w: w, cmd: cmd}, nil
}

// doneByte, written to the pipe, tells the watchdog that its bench's
// normal exit has killed every process it marked (Finish without keep,
// its kill pass complete) and starts none any more: the watchdog has
// nothing left to sweep.
const doneByte = 'd'

// Keep tells the watchdog that the processes still running were left on
// purpose (Finish with keep): it will not kill them when bench exits.
func (d *Watchdog) Keep() {
	if d != nil {
		_, _ = d.w.Write([]byte{keepByte})
	}
}

// Done tells the watchdog that Finish (without keep) killed every process
// this bench marked: it exits when bench does, without a sweep of its own
// (a /proc sweep, milliseconds of CPU, after every run).
func (d *Watchdog) Done() {
	if d != nil {
		_, _ = d.w.Write([]byte{doneByte})
	}
}

// PID is the watchdog's process id.
func (d *Watchdog) PID() int { return d.cmd.Process.Pid }

// Watch is the watchdog's body: it waits until in (its bench's pipe)
// closes, then, unless bench said Keep or Done, kills every process
// marked with mark (a killed bench could not). It returns what it
// killed.
func Watch(mark string, in io.Reader) (Killed, error) {
	o, ok := ParseOwner(mark)
	if !ok {
		return Killed{}, fmt.Errorf("watchdog: %q is not an owner mark", mark)
	}
	keep, done := false, false
	br := bufio.NewReader(in)
	for {
		b, err := br.ReadByte()
		if err != nil {
			break // EOF: bench has exited (or is exiting)
		}
		switch b {
		case keepByte:
			keep = true
		case doneByte:
			done = true
		}
	}
	if keep || done || Released(mark) {
		return Killed{}, nil
	}
	// The pipe closes while bench's exit is under way: give the kernel a
	// moment to finish it, so that no sweep races its last start.
	for i := 0; i < 100 && o.Alive(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return sweep(func(m string) bool { return m == mark })
}

// Package reaper makes sure that no process of a trial outlives the bench
// process that started it.
//
// Every process a LocalExecService line starts carries, in its
// environment, the identity of the bench process that owns it:
// BENCH_OWNER=o<boot>.<pid>.<start> (the boot id's first 8 hex digits,
// bench's pid and its start time in clock ticks since boot, which together
// never name another process). Children inherit their parent's
// environment, so grandchildren, background jobs (`sleep 100 &`) and
// processes that left the line's process group (setsid, double forks)
// carry the mark too.
//
//   - When bench stops the normal way, each line's process group is killed
//     when it is cancelled (services/local).
//   - When bench exits at once (a second Ctrl-C), KillOwn kills every
//     process that carries its own mark before it exits.
//   - When bench exits normally, Finish kills them too, unless teardown
//     is off (then Release, below).
//   - When bench dies without a chance to clean up (SIGKILL, the OOM
//     killer), its watchdog (StartWatchdog, Watch) kills them when the
//     pipe it holds to bench closes. Should the watchdog die as well,
//     the next bench run, worker or exec-trial on the machine calls
//     KillStale before it runs any trial: it kills every process of the
//     same user whose mark names an owner that is no longer alive (a
//     different boot, a pid that is gone or is now another process).
//   - When bench exits normally while processes it started still run on
//     purpose (a server that setup started, kept with --no-teardown),
//     Release records its mark under StateDir, and KillStale leaves those
//     processes alone. The record goes once they are all gone.
//
// KillOwn, KillStale and the watchdog kill with one kill pass
// (killpass.go): it stops (SIGSTOP) the whole tree before it kills it, so
// that nothing in it can fork meanwhile and what it forked stays its
// child, and it returns only after a sweep that proves that none of the
// tree is left, not even a process caught in the middle of an exec (whose
// environment reads as empty for an instant).
//
// Only processes started for trials are marked: bench's own helpers (the
// detached `bench exec-trial` processes of the local execution engine,
// which must outlive bench to be re-attached) are started without the
// mark, and their own trial processes carry the mark of the live
// exec-trial, so neither is touched.
//
// Why not Linux's parent-death signal (PR_SET_PDEATHSIG) with a child
// subreaper: the signal reaches only the direct child (the line's /bin/sh),
// not the background jobs and grandchildren the issue is about; a
// subreaper helps only while bench is alive to reap; and the signal fires
// when the OS *thread* that forked the child exits, which in Go happens
// whenever a goroutine that locked its thread ends (the CPU-pinning start
// in services/local does exactly that when it cannot restore a thread's
// mask), killing healthy trials. The mark needs no helper process, no
// per-line cost beyond one environment variable, and finds every
// descendant however it detached.
package reaper

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar is the environment variable that marks a trial's processes with
// their owner.
var EnvVar = "BENCH_OWNER" // a variable only so that this package's tests use their own

// Owner identifies a process across pid reuse and reboots.
type Owner struct {
	Boot  string // the first 8 hex digits of the boot id
	PID   int
	Start uint64 // start time, clock ticks since boot
}

// String is the mark: o<boot>.<pid>.<start>. It is safe in file names.
func (o Owner) String() string {
	return fmt.Sprintf("o%s.%d.%d", o.Boot, o.PID, o.Start)
}

// ParseOwner reads a mark written by Owner.String.
func ParseOwner(s string) (Owner, bool) {
	rest, ok := strings.CutPrefix(s, "o")
	if !ok {
		return Owner{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || len(parts[0]) != 8 || !isHex(parts[0]) {
		return Owner{}, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return Owner{}, false
	}
	start, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return Owner{}, false
	}
	return Owner{Boot: parts[0], PID: pid, Start: start}, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

var (
	selfOnce sync.Once
	self     Owner
	selfErr  error
	bootID   string
)

// procDir is /proc (tests may point it elsewhere).
var procDir = "/proc"

// Self returns this process's identity; the error says why it cannot be
// known (no /proc: then nothing is marked and nothing is reaped).
func Self() (Owner, error) {
	selfOnce.Do(func() {
		b, err := os.ReadFile(procDir + "/sys/kernel/random/boot_id")
		if err != nil {
			selfErr = fmt.Errorf("process identity: %w", err)
			return
		}
		bootID = bootPrefix(string(b))
		pid := os.Getpid()
		st, err := startTime(pid)
		if err != nil {
			selfErr = fmt.Errorf("process identity: %w", err)
			return
		}
		self = Owner{Boot: bootID, PID: pid, Start: st}
	})
	return self, selfErr
}

func bootPrefix(id string) string {
	id = strings.ReplaceAll(strings.TrimSpace(id), "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	return strings.ToLower(id)
}

// Mark returns the NAME=VALUE environment entry that marks a child as this
// process's, or "" when the identity is unknown.
func Mark() string {
	o, err := Self()
	if err != nil {
		return ""
	}
	return EnvVar + "=" + o.String()
}

// Unmarked returns env without any BENCH_OWNER entry: for the processes
// bench starts that must outlive it.
func Unmarked(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvVar+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Alive reports whether the owner still runs: same boot, and its pid is
// the same process (same start time), not a zombie.
func (o Owner) Alive() bool {
	if _, err := Self(); err != nil {
		return true // cannot tell: assume alive
	}
	if o.Boot != bootID {
		return false
	}
	st, err := startTime(o.PID)
	return err == nil && st == o.Start
}

// procStat is what the kill pass needs of /proc/PID/stat.
type procStat struct {
	state byte
	ppid  int
	pgrp  int
	flags uint64 // the kernel's PF_* flags
	start uint64 // clock ticks since boot
	// envStart and envEnd are where its environment lies in its memory
	// (fields 50 and 51, Linux 3.5+: envKnown). envEnd is 0 in the window
	// of an exec in which the new program's memory has no environment
	// yet.
	envStart, envEnd uint64
	envKnown         bool
}

// pfExiting is the kernel's PF_EXITING flag: the process is ending (its
// memory may already be gone, so its environment reads as empty).
const pfExiting = 0x4

// pfKthread is the kernel's PF_KTHREAD flag: a kernel thread (no memory,
// no environment; root's).
const pfKthread = 0x00200000

// readStat reads a process's state, parent, process group, flags and start
// time from /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	b, err := readProcFile(pid, "stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("process %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[2] field 5 (pgrp),
	// f[6] field 9 (flags), f[19] field 22 (start), f[47] and f[48]
	// fields 50 and 51 (env_start, env_end).
	if len(f) < 20 || len(f[0]) == 0 {
		return procStat{}, fmt.Errorf("process %d: malformed stat", pid)
	}
	var ps procStat
	ps.state = f[0][0]
	if ps.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, err
	}
	if ps.pgrp, err = strconv.Atoi(f[2]); err != nil {
		return procStat{}, err
	}
	if ps.flags, err = strconv.ParseUint(f[6], 10, 64); err != nil {
		return procStat{}, err
	}
	if ps.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procStat{}, err
	}
	if len(f) >= 49 {
		s, serr := strconv.ParseUint(f[47], 10, 64)
		e, eerr := strconv.ParseUint(f[48], 10, 64)
		if serr == nil && eerr == nil {
			ps.envStart, ps.envEnd, ps.envKnown = s, e, true
		}
	}
	return ps, nil
}

// stat reads a process's state, process group and start time.
func stat(pid int) (state byte, pgrp int, start uint64, err error) {
	ps, err := readStat(pid)
	return ps.state, ps.pgrp, ps.start, err
}

// readProcFile reads /proc/PID/NAME. Tests replace it to replay what the
// kernel shows of a process in the middle of an exec.
var readProcFile = func(pid int, name string) ([]byte, error) {
	return readSmall(procDir + "/" + strconv.Itoa(pid) + "/" + name)
}

func startTime(pid int) (uint64, error) {
	state, _, start, err := stat(pid)
	if err != nil {
		return 0, err
	}
	if state == 'Z' || state == 'X' {
		return 0, fmt.Errorf("process %d has ended", pid)
	}
	return start, nil
}

// markOf returns the owner mark in a process's environment ("" if none
// or unreadable: another user's process, or one that has ended).
func markOf(pid int) string {
	if env, m := readMark(pid); env == envMarked {
		return m
	}
	return "" // none, or not readable now (in an exec: readMark)
}

// markIn finds the owner mark in an environment block (NUL-separated
// NAME=VALUE entries).
func markIn(b []byte) (string, bool) {
	prefix := []byte(EnvVar + "=")
	for len(b) > 0 {
		kv := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):]), true
		}
	}
	return "", false
}

// Killed is what a sweep did.
type Killed struct {
	PIDs []int
	// Owners are the dead (or, for KillOwn, this) bench processes whose
	// processes were killed.
	Owners []string
}

// StateDir is where Release records the owners that exited normally:
// $XDG_CACHE_HOME/bench/released (~/.cache/bench/released), or
// $TMPDIR/bench-released-<uid> without a home.
func StateDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "bench", "released")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("bench-released-%d", os.Getuid()))
}

// Release is for a normal exit: when processes this bench started still
// run (a daemon that setup started and no teardown stopped, e.g. with
// --no-teardown), it records that they were left on purpose, so that
// KillStale leaves them alone. It does nothing when none runs.
func Release() error {
	me, err := Self()
	if err != nil {
		return err
	}
	mine := me.String()
	if len(find(func(m string) bool { return m == mine })) == 0 {
		return nil
	}
	dir := StateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("recording the processes left running: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, mine), nil, 0o600)
}

// KillStale kills every process (of this user) marked by a bench process
// that died without exiting normally (no Release), with SIGKILL, with the
// members of the process groups they lead and what they started (one kill
// pass: killPass). Release records whose processes are all gone are
// removed.
func KillStale() (Killed, error) {
	if _, err := Self(); err != nil {
		return Killed{}, err
	}
	dir := StateDir()
	alive := map[string]bool{}
	k, err := sweep(func(mark string) bool {
		a, seen := alive[mark]
		if !seen {
			o, ok := ParseOwner(mark)
			a = !ok || o.Alive() || released(dir, mark) // an unreadable mark is left alone
			alive[mark] = a
		}
		return !a
	})
	cleanReleased(dir)
	return k, err
}

// Released reports whether the owner mark exited normally, leaving
// processes running on purpose (Release).
func Released(mark string) bool { return released(StateDir(), mark) }

func released(dir, mark string) bool {
	_, err := os.Stat(filepath.Join(dir, mark))
	return err == nil
}

// cleanReleased removes the records of owners none of whose processes
// runs any more.
func cleanReleased(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return
	}
	running := map[string]bool{}
	for _, m := range find(func(string) bool { return true }) {
		running[m] = true
	}
	for _, e := range ents {
		if _, ok := ParseOwner(e.Name()); ok && !running[e.Name()] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// find returns the marks of the live marked processes that match.
func find(match func(mark string) bool) []string {
	var marks []string
	forEach(func(pid int, mark string) {
		if match(mark) {
			marks = append(marks, mark)
		}
	})
	return marks
}

// forEach calls fn for each live process of this user (not this one)
// that carries a mark.
func forEach(fn func(pid int, mark string)) error {
	d, err := os.Open(procDir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	me, uid := os.Getpid(), os.Getuid()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == me {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(procDir+"/"+n, &st) != nil || int(st.Uid) != uid {
			continue
		}
		mark := markOf(pid)
		if mark == "" {
			continue
		}
		if state, _, _, err := stat(pid); err != nil || state == 'Z' || state == 'X' {
			continue // ended (a zombie waits for its parent)
		}
		fn(pid, mark)
	}
	return nil
}

// KillOwn kills every process marked as this process's, with the members
// of the process groups they lead and what they started (one kill pass:
// killPass): for an exit that cannot wait for the trials to stop. When it
// returns nil, none of them runs any more.
func KillOwn() (Killed, error) {
	me, err := Self()
	if err != nil {
		return Killed{}, err
	}
	mine := me.String()
	return killPass(func(mark string) bool { return mark == mine })
}

// sweep kills the marked processes that match, and what they started
// (killPass).
func sweep(match func(mark string) bool) (Killed, error) { return killPass(match) }

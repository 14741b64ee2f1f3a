package reaper

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The kill pass: how KillOwn, KillStale and the watchdog kill a tree of
// marked processes that may be forking while they do.
//
// The earlier pass killed every marked process it saw and stopped after
// two sweeps in a row saw none, 1 ms apart. That missed a process that no
// sweep could recognise at the moment it looked. An exec makes
// /proc/PID/environ unreliable for a moment: between the moment the
// kernel installs the new program's memory and the moment it writes the
// new program's arguments and environment, it reads as empty (measured
// here: 1 to 6% of reads of the children of a shell loop of `setsid
// true`); and a read begun on the old program's memory stops short when
// the exec drops it, without the mark that bench appends last (about 1
// read in 1000). A `setsid sleep` started by a trial's shell execs twice
// (setsid, then sleep), and under load a process can be preempted inside
// that window for far longer than 1 ms. Once its shell was killed it was
// an orphan outside the shell's process group, and when both quiet sweeps
// fell in its exec windows it survived (TestSecondInterruptRacesTeardown,
// about once in 200 tries in CI).
//
// The pass now freezes the tree before it kills it, and ends only on a
// sweep that finds nothing of the tree left, with the limits said below:
//
//  1. Freeze. Each sweep lists /proc once and reads every process of this
//     user. A process whose mark matches is a member; so are the members
//     of a process group that a member leads (they are its own, even those
//     that dropped the mark), and a member's children whose environment
//     cannot be read (a non-dumpable program: it inherited the mark). Every
//     new member gets SIGSTOP. A stopped process cannot fork or exec (nor
//     end, unless someone kills it), and its children keep it as their
//     parent (they are not re-parented to init). So a tree that keeps
//     forking (a loop of `setsid sleep &`) stops growing, and the children
//     forked before the stop took effect are there in the next sweep,
//     setsid or not: found by their mark, or by their parent when their
//     environment cannot be read; one caught in an exec is waited for
//     until it shows its mark (2).
//  2. A sweep is clean when it adds no member, no process that may be the
//     tree's vanished between the listing and its reading or ended since
//     the last sweep (it may have forked after the listing first, its
//     child unlisted: a line's shell running `setsid sleep 300 &` forks
//     and exits at once; members the pass killed and processes read alive
//     without the mark before do not count, and one of which nothing is
//     known makes at most softSweeps sweeps in a row unclean), and no
//     process of this user is in the middle of an exec: one whose
//     environment, read, is not what the kernel says right after (its
//     env_end in /proc/PID/stat is 0, or the read was shorter: readMark).
//     Such a process may be an orphan of the tree that shows its mark a
//     moment later, so the pass reads it again until it can tell (up to
//     2 s for one process, then it is taken as not the tree's).
//     Before it kills, the pass also waits, for a few more clean sweeps at
//     most, until every member shows as stopped.
//  3. Kill. After a clean sweep every member gets SIGKILL, and the pass
//     waits until each has ended (a zombie counts as ended), so that the
//     orphans of the tree are re-parented and callers find them gone.
//  4. Confirm. The pass sweeps again. It returns only after a clean sweep
//     in which every member has ended or has SIGKILL pending: at that
//     sweep's start nothing of the tree could fork any more (the kernel
//     fails a fork whose parent has a fatal signal pending, or the child
//     is already listed), so every process of the tree alive then was
//     seen: by its mark, as a killed member's child, or as an exec in
//     progress. Otherwise the new members are frozen and killed in turn.
//
// Pid reuse: a member is its pid and its start time. It is signalled
// through a pidfd opened when it is found, once its start time is checked
// again after the open, so a signal never reaches another process that
// took a dead member's pid; without pidfds (kernels before 5.3) the pid is
// signalled, which can only go astray if a stopped member is killed by
// someone else and its pid is reused within the pass. Parent and group
// links are taken from one sweep's readings, and only to members that are
// alive with their recorded start time in that sweep.
//
// Not killing what is not the trial's: membership is the mark (as
// before), a group that a member leads (as before: the old pass killed
// such groups with kill(-pgid)), and a member's children that cannot show
// whether they carry the mark. A child that visibly dropped the mark (`env
// -u BENCH_OWNER server &`, the documented way to outlive bench) or that
// carries another bench's mark is left alone, as are its children.
// Processes of other users are never read or signalled.
//
// Why not a child subreaper (PR_SET_CHILD_SUBREAPER) so that orphans stay
// findable by their parent pid: it works only for this bench's own trials
// (KillStale and the watchdog kill another, dead, bench's), bench would
// have to reap every orphan that it did not start (a wait for any child
// races os/exec's waits for its own), and the freeze already keeps a
// frozen member's children attached to it. A cgroup per trial (freeze and
// kill the cgroup) would be exact, but needs a writable cgroup v2 tree,
// which bench cannot count on (its `--cgroups` groups are off by default,
// one per runner, not per trial).
//
// Still not covered: a chain of processes of the tree that each forks and
// ends within one sweep for softSweeps+1 sweeps in a row (see softSweeps);
// a process that drops the mark and whose parent ends on its own before
// the pass sees it (as before); and a member that is in uninterruptible
// sleep for the whole time the pass waits for it to stop
// (then it is killed without having been seen stopped, and a child it
// forks in that instant is found only by its mark). A pass that cannot
// reach a clean sweep in killPassLimit kills what it found and returns an
// error.

// killPassLimit bounds one kill pass.
var killPassLimit = 5 * time.Second

// execWaitLimit is how long a process caught in the middle of an exec is
// waited for before it is taken as not the tree's. An exec's window is
// kernel work (mapping the program and its loader, a page fault or two):
// microseconds, milliseconds where the machine is loaded or the disk cold.
// The bound is for a process that never reads consistently (its
// environment's memory unmapped), which would otherwise hold every pass
// to killPassLimit.
var execWaitLimit = 2 * time.Second

// stopWaits is how many sweeps a member that has not stopped yet is waited
// for before the tree is killed anyway (a process in uninterruptible sleep
// stops only when it leaves it).
const stopWaits = 20

// softSweeps is how many sweeps in a row a process of which nothing is
// known, ended since the last sweep, makes unclean. It may have been of
// the tree and forked after the listing, so the next sweep looks for its
// child; but on a busy machine (root sees every process) unrelated
// processes end all the time, and a pass that waited for a sweep with
// none might never end. A tree that escapes needs a chain of processes
// that each forks and ends within one sweep, four sweeps in a row.
const softSweeps = 3

// sweepPause is the pause between sweeps that are not clean.
const sweepPause = 500 * time.Microsecond

// envState is what a process's environment says about its mark.
type envState int

const (
	envNone       envState = iota // readable, without the mark (or another variable's value)
	envMarked                     // readable, with a mark (mark says which)
	envUnreadable                 // cannot be read (a non-dumpable process)
	envExec                       // empty, with an empty command line: in the middle of an exec
	envGone                       // the process ended meanwhile
)

// readMark says what pid's environment says about its mark. An exec
// under way can make a read wrong in two ways: in the window between the
// moment the new program's memory is installed and the moment its
// arguments and environment are written, the environment reads as empty;
// and a read begun on the old program's memory stops short when exec
// drops it, so that it may lack the mark (bench appends the mark last) or
// hold a cut one. So a read is trusted only when the kernel, asked
// afterwards, says the environment is there (env_end set) and as long as
// what was read. Otherwise the process is taken as in an exec: read again.
func readMark(pid int) (envState, string) {
	env, mark, _ := readMarkStat(pid)
	return env, mark
}

// readMarkStat is readMark, with the process's stat as read right after
// its environment (not valid with envGone).
func readMarkStat(pid int) (envState, string, procStat) {
	b, err := readProcFile(pid, "environ")
	if err != nil && !gone(err) {
		return envUnreadable, "", procStat{} // the caller reads its stat
	}
	ps, serr := readStat(pid)
	switch {
	case serr != nil:
		return envGone, "", ps
	case ps.state == 'Z' || ps.state == 'X' || ps.flags&(pfExiting|pfKthread) != 0:
		return envNone, "", ps // ending (its memory may be gone), or a kernel thread: it forks nothing more
	case err != nil:
		return envExec, "", ps // no memory to read yet
	case ps.envKnown && (ps.envEnd == 0 || uint64(len(b)) != ps.envEnd-ps.envStart):
		return envExec, "", ps
	case !ps.envKnown && len(b) == 0:
		// A kernel without the fields: in the window, the command line
		// reads as empty too.
		if c, cerr := readProcFile(pid, "cmdline"); cerr == nil && len(c) == 0 {
			return envExec, "", ps
		}
	}
	if m, ok := markIn(b); ok {
		return envMarked, m, ps
	}
	return envNone, "", ps
}

func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// member is a process of the tree being killed.
type member struct {
	pid    int
	start  uint64
	h      handle
	killed bool
	dead   bool
	sweep  int // the sweep that added it
}

type procID struct {
	pid   int
	start uint64
}

// pass is one kill pass's state.
type pass struct {
	match   func(mark string) bool
	members map[int]*member // by pid: the latest member with that pid
	order   []*member
	owners  map[string]bool
	k       Killed
	// execSince is when each process now in the middle of an exec was
	// first seen so, in a row.
	execSince map[procID]time.Time
	// env is what earlier sweeps read of the environments of processes
	// that are not members: it changes only with an exec, and a process
	// can only gain this tree's mark in an exec by being given it.
	env map[int]envRead
	// sweeps counts the sweeps so far.
	sweeps int
	// ended are the processes that the last sweep saw ended (zombies, or
	// exiting).
	ended map[procID]bool
}

type envRead struct {
	env   envState
	mark  string
	start uint64 // of the process it was read from
}

// sweepResult is what one sweep found.
type sweepResult struct {
	added     int  // new members
	unsettled bool // a process of the tree ended, or one of the user is in an exec
	// soft: a process of which nothing is known ended after the listing
	// (see softSweeps).
	soft     bool
	running  int // members alive, not killed, not seen stopped
	unkilled int // members alive, not killed
}

// killPass kills the processes of this user whose mark matches, the
// members of the process groups they lead and what they started, as
// described above. It returns what it killed.
func killPass(match func(mark string) bool) (Killed, error) {
	p := newPass(match)
	defer p.close()
	deadline := time.Now().Add(killPassLimit)
	waits, soft := 0, 0
	for {
		r, err := p.sweep()
		if err != nil {
			p.killAll()
			return p.k, err
		}
		hard := r.added > 0 || r.unsettled
		switch {
		case hard || !r.soft:
			soft = 0
		default:
			soft++
		}
		clean := !hard && (!r.soft || soft > softSweeps)
		if clean && r.unkilled == 0 {
			// Every member has ended or has SIGKILL pending (one in
			// uninterruptible sleep ends when it leaves it): none can fork
			// any more, and a fork that was under way when the signal came
			// either failed or left a child that this sweep saw.
			return p.k, nil
		}
		if time.Now().After(deadline) {
			p.killAll()
			p.waitDead(time.Now().Add(100 * time.Millisecond))
			return p.k, fmt.Errorf("the kill pass gave up after %v: processes were still starting or could not be told apart; %d killed", killPassLimit, len(p.k.PIDs))
		}
		if !clean || (r.running > 0 && waits < stopWaits) {
			if clean {
				waits++
			} else {
				waits = 0
			}
			time.Sleep(sweepPause)
			continue
		}
		p.killAll()
		p.waitDead(deadline)
		waits = 0
	}
}

func newPass(match func(mark string) bool) *pass {
	return &pass{match: match, members: map[int]*member{}, owners: map[string]bool{},
		execSince: map[procID]time.Time{}, env: map[int]envRead{}}
}

// sweepProc is one process as a sweep read it.
type sweepProc struct {
	procStat
	pid  int
	env  envState
	mark string
}

// sweep lists /proc once, updates the members (ended, stopped), adds and
// stops new ones, and says whether anything is unsettled.
func (p *pass) sweep() (sweepResult, error) {
	var r sweepResult
	p.sweeps++
	d, err := os.Open(procDir)
	if err != nil {
		return r, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return r, err
	}
	me, uid := os.Getpid(), os.Getuid()
	procs := make([]sweepProc, 0, 64)
	index := map[int]int{}
	ended := map[procID]bool{}
	defer func() { p.ended = ended }()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == me {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(procDir+"/"+n, &st); err != nil {
			r.soft = true // ended after the listing: it may have forked first
			continue
		}
		if int(st.Uid) != uid {
			continue
		}
		// A process seen before needs its stat only (its environment
		// changes only with an exec, and a process can only gain this
		// tree's mark in one by being given it); a new one, its
		// environment then its stat (readMarkStat).
		var sp sweepProc
		m, known := p.members[pid], false
		e, cached := p.env[pid]
		if m != nil || cached {
			ps, err := readStat(pid)
			if err != nil {
				r.soft = true // ended after the listing: it may have forked first
				continue
			}
			sp = sweepProc{procStat: ps, pid: pid}
			switch {
			case m != nil && m.start == ps.start:
				known = true
			case cached && e.start == ps.start:
				sp.env, sp.mark, known = e.env, e.mark, true
			}
		}
		if !known {
			env, mark, ps := readMarkStat(pid)
			switch env {
			case envGone:
				r.soft = true
				continue
			case envUnreadable:
				var err error
				if ps, err = readStat(pid); err != nil {
					r.soft = true
					continue
				}
			}
			sp = sweepProc{procStat: ps, pid: pid, env: env, mark: mark}
			ended := ps.state == 'Z' || ps.state == 'X' || ps.flags&pfExiting != 0
			if env != envExec && !ended {
				p.env[pid] = envRead{env: env, mark: mark, start: ps.start}
			}
		}
		if sp.flags&pfKthread != 0 {
			continue
		}
		if sp.state == 'Z' || sp.state == 'X' || sp.flags&pfExiting != 0 {
			// Ended (a zombie waits for its parent): its environment is
			// gone with its memory. If it ended since the last sweep, it
			// may have forked after this sweep's listing first (a shell
			// whose line is `setsid sleep 300 &` forks and exits at
			// once), and its child, not listed, must be looked for again.
			// Members this pass killed before the sweep are not counted
			// (a fork after SIGKILL fails, so their children are listed),
			// nor processes that an earlier sweep read alive without this
			// tree's mark. A member that ended on its own, or a marked
			// one, makes the sweep unclean; one of which nothing is known
			// (born since the last sweep) makes it unsure (soft, below).
			id := procID{pid, sp.start}
			ended[id] = true
			if !p.ended[id] {
				switch {
				case m != nil && m.start == sp.start:
					if !m.killed {
						r.unsettled = true
					}
				case known && sp.env == envMarked && p.match(sp.mark):
					r.unsettled = true
				case known && (sp.env == envNone || sp.env == envMarked):
				default:
					r.soft = true
				}
			}
			continue
		}
		ps := sp.procStat
		if m := p.members[pid]; (m == nil || m.start != ps.start) && sp.env == envMarked && p.match(sp.mark) {
			// Stopped at once, not after the whole listing: a tree that
			// forks as fast as it can would otherwise take the CPU the
			// sweep needs, and grow while it reads.
			p.add(&sp, &r)
		}
		index[pid] = len(procs)
		procs = append(procs, sp)
	}

	// The members: which ended, which have stopped.
	var queue []int
	for _, m := range p.order {
		if m.dead {
			continue
		}
		if m.sweep == p.sweeps {
			queue = append(queue, m.pid) // just added and stopped
			r.unkilled++
			continue
		}
		i, ok := index[m.pid]
		if !ok || procs[i].start != m.start {
			m.dead = true
			continue
		}
		queue = append(queue, m.pid) // a killed member's children are still its own
		if m.killed {
			continue
		}
		r.unkilled++
		if s := procs[i].state; s != 'T' && s != 't' {
			r.running++
			_ = m.h.signal(syscall.SIGSTOP) // again: someone may have continued it
		}
	}
	isMember := func(pid int) bool {
		m := p.members[pid]
		return m != nil && !m.dead
	}
	// New members: the marked ones (added above), then, from every
	// member, its group (when it leads one) and its children that cannot
	// show they dropped the mark.
	children := map[int][]int{}
	groups := map[int][]int{}
	for i := range procs {
		children[procs[i].ppid] = append(children[procs[i].ppid], i)
		groups[procs[i].pgrp] = append(groups[procs[i].pgrp], i)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		lead := procs[index[pid]].pgrp == pid
		kin := children[pid]
		if lead {
			kin = append(kin[:len(kin):len(kin)], groups[pid]...)
		}
		for _, i := range kin {
			sp := &procs[i]
			if isMember(sp.pid) {
				continue
			}
			inGroup := lead && sp.pgrp == pid
			if inGroup || sp.env == envUnreadable || sp.env == envMarked && p.match(sp.mark) {
				if p.add(sp, &r) {
					queue = append(queue, sp.pid)
				}
			}
			// Otherwise it dropped the mark, carries another bench's, or is
			// in an exec (below: unsettled until it shows which).
		}
	}

	// Processes in the middle of an exec that are not members: an orphan
	// of the tree shows its mark once the exec is done.
	now := time.Now()
	seen := map[procID]bool{}
	for i := range procs {
		sp := &procs[i]
		if sp.env != envExec || isMember(sp.pid) {
			continue
		}
		id := procID{sp.pid, sp.start}
		seen[id] = true
		since, ok := p.execSince[id]
		if !ok {
			since = now
			p.execSince[id] = now
		}
		if now.Sub(since) < execWaitLimit {
			r.unsettled = true
		}
	}
	for id := range p.execSince {
		if !seen[id] {
			delete(p.execSince, id)
		}
	}
	return r, nil
}

// add makes sp a member and stops it. It reports false when sp ended
// meanwhile (and marks the sweep unsettled).
func (p *pass) add(sp *sweepProc, r *sweepResult) bool {
	h, err := openHandle(sp.pid)
	if err != nil {
		r.unsettled = true
		return false
	}
	if ps, err := readStat(sp.pid); err != nil || ps.start != sp.start || ps.state == 'Z' || ps.state == 'X' {
		h.close() // ended, and maybe its pid taken by another process
		r.unsettled = true
		return false
	}
	m := &member{pid: sp.pid, start: sp.start, h: h, sweep: p.sweeps}
	p.members[sp.pid] = m
	p.order = append(p.order, m)
	_ = h.signal(syscall.SIGSTOP)
	r.added++
	p.k.PIDs = append(p.k.PIDs, sp.pid)
	if sp.env == envMarked && p.match(sp.mark) && !p.owners[sp.mark] {
		p.owners[sp.mark] = true
		p.k.Owners = append(p.k.Owners, sp.mark)
	}
	return true
}

// killAll sends SIGKILL to every member alive that has not had it.
func (p *pass) killAll() {
	for _, m := range p.order {
		if !m.dead && !m.killed {
			_ = m.h.signal(syscall.SIGKILL)
			m.killed = true
		}
	}
}

// waitDead waits, until deadline, for the killed members to end.
func (p *pass) waitDead(deadline time.Time) {
	for {
		alive := false
		for _, m := range p.order {
			if m.dead || !m.killed {
				continue
			}
			ps, err := readStat(m.pid)
			if err != nil || ps.start != m.start || ps.state == 'Z' || ps.state == 'X' {
				m.dead = true
				continue
			}
			alive = true
		}
		if !alive || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func (p *pass) close() {
	for _, m := range p.order {
		m.h.close()
	}
}

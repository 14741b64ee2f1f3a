package sshpool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/engines"
)

func decodeRef(b engines.Ref) (ref, error) {
	var r ref
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("ssh pool job handle: %w", err)
	}
	if r.Host == "" || r.Run == "" || !path.IsAbs(r.Run) {
		return r, fmt.Errorf("ssh pool job handle %s: host and an absolute run directory are required", b)
	}
	return r, nil
}

// hostOf returns the pool's host of r, nil when the config no longer
// lists it.
func (e *Engine) hostOf(r ref) *host {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byAddr[r.Host]
}

// Poll reads the job's state with one command on its host: an exit file
// means Done; a live process of the run means Running; processes gone
// without an exit file mean Lost. Progress is the size of the job's log.
func (e *Engine) Poll(ctx context.Context, b engines.Ref) (engines.State, error) {
	r, err := decodeRef(b)
	if err != nil {
		return engines.State{}, err
	}
	h := e.hostOf(r)
	if h == nil {
		return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("host %s is no longer in the SSH pool's hosts", r.Host)}, nil
	}
	st, err := h.h.PeekDetached(ctx, r.Run)
	if err == nil && st.Started && !st.Exited {
		e.mu.Lock()
		due := time.Since(e.checked[r.key()]) >= livenessEvery
		e.mu.Unlock()
		if due {
			st, err = h.h.DetachedState(ctx, r.Run)
			if err == nil {
				e.mu.Lock()
				e.checked[r.key()] = time.Now()
				e.mu.Unlock()
			}
		}
	}
	e.noteResult(ctx, h, err)
	if err != nil {
		return engines.State{}, err
	}
	s := engines.State{Progress: strconv.FormatInt(st.OutputSize, 10)}
	switch {
	case st.Exited:
		s.Phase = engines.Done
		if st.ExitCode != 0 {
			s.Reason = fmt.Sprintf("exit code %d", st.ExitCode)
		}
	case !st.Exists:
		s.Phase, s.Reason = engines.Lost, fmt.Sprintf("run directory %s is gone from %s", r.Run, r.Host)
	case !st.Started:
		s.Phase = engines.Queued
		if time.Since(r.Submitted) > startGrace {
			s.Phase, s.Reason = engines.Lost, fmt.Sprintf("the job did not start on %s within %s (see %s/launch.log)", r.Host, startGrace, r.Run)
		}
	case st.Alive:
		s.Phase = engines.Running
	default:
		s.Phase, s.Reason = engines.Lost, fmt.Sprintf("the job's processes on %s ended without an exit status (killed, or the host restarted)", r.Host)
	}
	e.mu.Lock()
	if s.Phase.Final() {
		e.releaseLocked(r.Host, r.key(), r.Job)
	} else if !h.busy[r.key()] {
		// A job submitted by an earlier life of bench: it holds a slot.
		if cur, ok := e.jobs[r.Job]; !ok || cur == r.key() {
			e.hold(h, r.Job, r.key())
		}
	}
	e.mu.Unlock()
	return s, nil
}

// Fetch reads a finished job's outcome file (nil when there is none) and
// the tail of its log.
func (e *Engine) Fetch(ctx context.Context, b engines.Ref) (engines.Result, error) {
	r, err := decodeRef(b)
	if err != nil {
		return engines.Result{}, err
	}
	h := e.hostOf(r)
	if h == nil {
		return engines.Result{}, fmt.Errorf("host %s is no longer in the SSH pool's hosts", r.Host)
	}
	var res engines.Result
	if r.Outcome != "" {
		out, err := h.h.ReadFile(ctx, r.Outcome, maxOutcomeBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			e.noteResult(ctx, h, err)
			return engines.Result{}, err
		default:
			res.Outcome = out
		}
	}
	tail, _, err := h.h.ReadTail(ctx, r.Log, logTailBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.noteResult(ctx, h, err)
		return engines.Result{}, err
	}
	res.Log = string(tail)
	e.noteResult(ctx, h, nil)
	return res, nil
}

// Cancel kills the job's process group (a job that ended is left alone)
// and frees its slot, even when the host cannot be reached (the job is
// given up: nobody polls it again).
func (e *Engine) Cancel(ctx context.Context, b engines.Ref) error {
	r, err := decodeRef(b)
	if err != nil {
		return err
	}
	h := e.hostOf(r)
	if h == nil {
		return fmt.Errorf("cancelling %s: host %s is no longer in the SSH pool's hosts", r.Run, r.Host)
	}
	defer e.release(r)
	st, err := h.h.DetachedState(ctx, r.Run)
	if err == nil && st.Exists && !st.Exited {
		err = h.h.KillDetached(ctx, r.Run)
	}
	e.noteResult(ctx, h, err)
	if err != nil {
		return fmt.Errorf("cancelling %s on %s: %w", r.Run, r.Host, err)
	}
	return nil
}

// SubmitPilots starts count copies of argv detached, one per free host
// slot, least loaded hosts first. argv[0] is replaced by the host's bench
// (argv is a bench command line). It returns the refs of the pilots
// started, with an error when not all could be.
func (e *Engine) SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]engines.Ref, error) {
	if len(argv) == 0 {
		return nil, errors.New("pilots: empty command line")
	}
	if !safeName.MatchString(name) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("pilot name %q: want letters, digits, '-', '_' and '.' only", name)
	}
	if count > e.slots {
		return nil, fmt.Errorf("pilots: %d asked for, but the SSH pool has %d slots in all", count, e.slots)
	}
	stamp := time.Now().UTC().Format("20060102T150405")
	var refs []engines.Ref
	for i := 0; i < count; i++ {
		base := fmt.Sprintf("%s-pilot-%s-%d", name, stamp, i)
		b, err := e.submitPilot(ctx, base, argv)
		if err != nil {
			return refs, fmt.Errorf("pilot %d of %d: %w", i+1, count, err)
		}
		refs = append(refs, b)
	}
	return refs, nil
}

func (e *Engine) submitPilot(ctx context.Context, base string, argv []string) (engines.Ref, error) {
	var r ref
	h, err := e.place(ctx, base, "", base, func(h *host) error {
		if err := e.prepare(ctx, h); err != nil {
			return err
		}
		r = ref{Host: h.addr, Run: path.Join(h.workdir, base+".run"), Job: base, Submitted: time.Now().UTC()}
		r.Log, r.Exit = path.Join(r.Run, "stdout"), path.Join(r.Run, "exit")
		cmd := append([]string{h.bench}, argv[1:]...)
		script := "exec 2>&1\n"
		if e.driverDir != "" {
			// Relative config paths resolve as on the driver.
			script += "cd " + engines.ShellQuote(e.driverDir) + " 2>/dev/null || true\n"
		}
		return e.start(ctx, h, r.Run, script+"exec "+engines.ShellLine(cmd)+"\n")
	})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.releaseLocked(h.addr, h.addr+"\x00pending:"+base, "")
	e.hold(h, "", r.key())
	e.mu.Unlock()
	return json.Marshal(r)
}

// HostStatus is one host's state, for status displays and tests.
type HostStatus struct {
	Addr       string
	Slots      int
	Busy       int
	Failures   int
	AsideUntil time.Time
}

// Hosts returns the hosts' states.
func (e *Engine) Hosts() []HostStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []HostStatus
	for _, h := range e.hosts {
		out = append(out, HostStatus{Addr: h.addr, Slots: h.slots, Busy: len(h.busy), Failures: h.failures, AsideUntil: h.asideUntil})
	}
	return out
}

// ReadProgress reads the job's progress file on its host over SFTP
// (engines.ProgressReader).
func (e *Engine) ReadProgress(ctx context.Context, b engines.Ref, offset int64) ([]byte, error) {
	r, err := decodeRef(b)
	if err != nil {
		return nil, err
	}
	p := engines.ProgressPath(r.Outcome)
	if p == "" {
		return nil, nil
	}
	h := e.hostOf(r)
	if h == nil {
		return nil, fmt.Errorf("host %s is no longer in the SSH pool's hosts", r.Host)
	}
	data, err := h.h.ReadFrom(ctx, p, offset, engines.MaxProgressRead)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

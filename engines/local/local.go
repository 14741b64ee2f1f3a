// Package local is the local execution engine: each trial is a detached
// `bench exec-trial` process on this machine, in a session of its own. It
// outlives the bench that started it, so that a restarted bench
// re-attaches to running trials instead of running them again; it is also
// the model for the other engines and what their tests are checked
// against.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/internal/reaper"
)

func init() {
	engines.Register(New, "bench.engines.LocalEngine", "bench.engines.local.LocalEngine")
}

// Config is the local engine's own config.
type Config struct {
	// MaxJobs is how many trials run at once (default num_trial_runners).
	MaxJobs int `json:"max_jobs,omitempty"`
}

// Engine runs jobs as detached local processes.
type Engine struct {
	common  engines.Common
	slots   int
	workdir string
	dir     string

	// ended holds, by exit file, a channel closed when the job's process
	// (this process's child) has ended (Notifier).
	mu    sync.Mutex
	ended map[string]chan struct{}
}

// ref is the local engine's job reference.
type ref struct {
	PID int `json:"pid"`
	// Started is the process's start time in clock ticks since boot
	// (/proc/PID/stat): a reused pid does not pass for the job.
	Started uint64 `json:"started"`
	Request string `json:"request"`
	Outcome string `json:"outcome"`
	Log     string `json:"log"`
	Exit    string `json:"exit"`
}

// New builds a local engine.
func New(_ context.Context, p engines.Params) (engines.Engine, error) {
	var c Config
	if err := decode.Into(p.Config, &c); err != nil {
		return nil, err
	}
	if c.MaxJobs < 0 {
		return nil, fmt.Errorf("max_jobs must be 1 or more, got %d", c.MaxJobs)
	}
	e := &Engine{common: p.Common, slots: c.MaxJobs, dir: p.Dir}
	if e.slots == 0 {
		e.slots = p.Slots
	}
	e.workdir = p.Common.WorkDir
	if e.workdir == "" {
		e.workdir = filepath.Join(".bench", "jobs", p.ExperimentID)
	}
	if !filepath.IsAbs(e.workdir) {
		e.workdir = filepath.Join(p.Dir, e.workdir)
	}
	if p.ValidateOnly {
		return e, nil
	}
	if err := os.MkdirAll(e.workdir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	return e, nil
}

// Name is "local".
func (e *Engine) Name() string { return "local" }

// Slots is max_jobs.
func (e *Engine) Slots() int { return e.slots }

// Close releases nothing.
func (e *Engine) Close() error { return nil }

// Submit starts the job's bench exec-trial in a new session, its output in
// a log file and its exit status written to a file when it ends. A job of
// the same engines.SubmitName started earlier from this workdir (a bench
// killed after starting it, before recording it with the trial) that
// still runs or has ended is taken instead of starting the trial again.
func (e *Engine) Submit(ctx context.Context, job engines.Job) (engines.Ref, error) {
	base := filepath.Join(e.workdir, fmt.Sprintf("%s.%d", job.Name, job.Attempt))
	r := ref{Request: base + ".request.json", Outcome: base + ".outcome.json", Log: base + ".log", Exit: base + ".exit"}
	name := engines.SubmitName(job)
	if earlier, ok := e.earlier(base, name, r); ok {
		return json.Marshal(earlier)
	}
	for _, f := range []string{r.Outcome, engines.ProgressPath(r.Outcome), r.Log, r.Exit, base + ".job"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.WriteFile(r.Request, job.Request, 0o600); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	// The shell only runs "$@" and records its status: no value is
	// spliced into its text.
	argv := append([]string{"/bin/sh", "-c", `"$@"; s=$?; echo $s > "$BENCH_EXIT_FILE.tmp" && mv "$BENCH_EXIT_FILE.tmp" "$BENCH_EXIT_FILE"`, "sh"},
		engines.Command(e.common.Bench, r.Request, r.Outcome)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = e.dir
	// Without bench's owner mark: the job must outlive this bench (to be
	// re-attached), so a later bench must not take it for a dead bench's
	// trial process (internal/reaper).
	cmd.Env = append(reaper.Unmarked(os.Environ()), "BENCH_EXIT_FILE="+r.Exit)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", e.common.Bench, err)
	}
	r.PID = cmd.Process.Pid
	r.Started, _ = startTime(r.PID)
	// The job's name and process, for a restarted bench's Submit (earlier).
	if b, err := json.Marshal(startedJob{Name: name, PID: r.PID, Started: r.Started}); err == nil {
		_ = os.WriteFile(base+".job", b, 0o600)
	}
	// Reap the process when it ends (it is this process's child), and
	// tell the runner following the job at once.
	done := make(chan struct{})
	e.mu.Lock()
	if e.ended == nil {
		e.ended = map[string]chan struct{}{}
	}
	e.ended[r.Exit] = done
	e.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return json.Marshal(r)
}

// startedJob is <base>.job: which job was started as which process.
type startedJob struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Started uint64 `json:"started"`
}

// earlier returns the job an earlier Submit of the same name started from
// this workdir when it still runs or recorded its end.
func (e *Engine) earlier(base, name string, r ref) (ref, bool) {
	b, err := os.ReadFile(base + ".job")
	if err != nil {
		return r, false
	}
	var sj startedJob
	if json.Unmarshal(b, &sj) != nil || sj.Name != name || sj.PID <= 0 {
		return r, false
	}
	r.PID, r.Started = sj.PID, sj.Started
	if _, err := os.Stat(r.Exit); err == nil || alive(r) {
		return r, true
	}
	return r, false
}

// Ended returns a channel closed when the job's process ends, for jobs
// this engine started (nil for others: a re-attached job is polled).
func (e *Engine) Ended(raw engines.Ref) <-chan struct{} {
	r, err := decodeRef(raw)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch, ok := e.ended[r.Exit]; ok {
		return ch
	}
	return nil
}

// forget drops a finished job's channel.
func (e *Engine) forget(exit string) {
	e.mu.Lock()
	delete(e.ended, exit)
	e.mu.Unlock()
}

func decodeRef(raw engines.Ref) (ref, error) {
	var r ref
	if err := json.Unmarshal(raw, &r); err != nil || r.PID <= 0 || r.Exit == "" {
		return r, fmt.Errorf("not a local job reference: %s", raw)
	}
	return r, nil
}

// Poll reads the exit file, then whether the process still runs.
func (e *Engine) Poll(_ context.Context, raw engines.Ref) (engines.State, error) {
	r, err := decodeRef(raw)
	if err != nil {
		return engines.State{}, err
	}
	if b, err := os.ReadFile(r.Exit); err == nil {
		e.forget(r.Exit)
		st := engines.State{Phase: engines.Done}
		if code := strings.TrimSpace(string(b)); code != "0" {
			st.Reason = "bench exec-trial exited with status " + code
		}
		return st, nil
	}
	var size int64
	if fi, err := os.Stat(r.Log); err == nil {
		size = fi.Size()
	}
	if alive(r) {
		return engines.State{Phase: engines.Running, Progress: strconv.FormatInt(size, 10)}, nil
	}
	// The process may have ended between the two reads.
	if _, err := os.Stat(r.Exit); err == nil {
		return e.Poll(context.Background(), raw)
	}
	e.forget(r.Exit)
	return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("process %d ended without recording its exit status", r.PID)}, nil
}

// Fetch reads the outcome file and the log's tail.
func (e *Engine) Fetch(_ context.Context, raw engines.Ref) (engines.Result, error) {
	r, err := decodeRef(raw)
	if err != nil {
		return engines.Result{}, err
	}
	var res engines.Result
	if b, err := os.ReadFile(r.Outcome); err == nil {
		res.Outcome = b
	} else if !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	res.Log = engines.LogTail(r.Log, 4096)
	return res, nil
}

// Cancel stops the job's process group: SIGTERM, then SIGKILL after 10 s.
func (e *Engine) Cancel(ctx context.Context, raw engines.Ref) error {
	r, err := decodeRef(raw)
	if err != nil {
		return err
	}
	if !alive(r) {
		return nil
	}
	_ = syscall.Kill(-r.PID, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for alive(r) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(r) {
		_ = syscall.Kill(-r.PID, syscall.SIGKILL)
	}
	return nil
}

// alive reports whether the job's process runs (the same process: its
// start time matches).
func alive(r ref) bool {
	st, err := startTime(r.PID)
	if err != nil {
		return false
	}
	return r.Started == 0 || st == r.Started
}

// startTime reads a process's start time from /proc/PID/stat (field 22);
// a zombie counts as ended.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has ended", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// SubmitPilots starts count detached processes running argv.
func (e *Engine) SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]engines.Ref, error) {
	var refs []engines.Ref
	for i := 1; i <= count; i++ {
		base := filepath.Join(e.workdir, fmt.Sprintf("%s.pilot%d", name, i))
		r := ref{Log: base + ".log", Exit: base + ".exit"}
		log, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return refs, err
		}
		full := append([]string{"/bin/sh", "-c", `"$@"; s=$?; echo $s > "$BENCH_EXIT_FILE.tmp" && mv "$BENCH_EXIT_FILE.tmp" "$BENCH_EXIT_FILE"`, "sh"}, argv...)
		cmd := exec.Command(full[0], full[1:]...)
		cmd.Dir = e.dir
		cmd.Env = append(reaper.Unmarked(os.Environ()), "BENCH_EXIT_FILE="+r.Exit) // outlives bench: no owner mark
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		log.Close()
		if err != nil {
			return refs, fmt.Errorf("starting pilot %d: %w", i, err)
		}
		r.PID = cmd.Process.Pid
		r.Started, _ = startTime(r.PID)
		go func() { _ = cmd.Wait() }()
		b, _ := json.Marshal(r)
		refs = append(refs, b)
	}
	return refs, nil
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.PilotSubmitter = (*Engine)(nil)
	_ engines.Notifier       = (*Engine)(nil)
)

// ReadProgress reads the job's progress file (engines.ProgressReader).
func (e *Engine) ReadProgress(_ context.Context, raw engines.Ref, offset int64) ([]byte, error) {
	r, err := decodeRef(raw)
	if err != nil {
		return nil, err
	}
	p := engines.ProgressPath(r.Outcome)
	if p == "" {
		return nil, nil
	}
	return engines.ReadFileFrom(p, offset)
}

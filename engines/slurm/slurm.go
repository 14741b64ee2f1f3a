// Package slurm is the Slurm execution engine: each trial is a batch job
// (sbatch) that runs `bench exec-trial` on a compute node. The driver and
// the nodes must share a file system: the request, the outcome and the
// job's log are files in the engine's workdir, and the far side loads the
// driver's configs from the same paths. Job states come from squeue, then
// scontrol (finished jobs the controller still holds, MinJobAge), then
// sacct (when the cluster has accounting storage).
//
// Slurm's commands run on this machine (a submit host) with argv, never
// through a shell; the batch script only execs bench with quoted paths
// (the trial's values are in the request file).
package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/trial"
)

func init() {
	engines.Register(New, "bench.engines.SlurmEngine", "bench.engines.slurm.SlurmEngine")
}

// Config is the Slurm engine's own config (beside engines.Common).
type Config struct {
	// Partition is sbatch --partition (default: the cluster's default).
	Partition string `json:"partition,omitempty"`
	// TimeLimit is sbatch --time: a Slurm time string ("30", "1:30:00",
	// "2-00:00:00": minutes, hours, days), a Go duration with units
	// ("90s", "1h30m") or a number of seconds. Slurm counts whole minutes
	// and rounds up. A job killed at its limit ends TIMED_OUT.
	TimeLimit TimeLimit `json:"time_limit,omitzero"`
	// CPUsPerTask is sbatch --cpus-per-task.
	CPUsPerTask int `json:"cpus_per_task,omitempty"`
	// Mem is sbatch --mem ("2G", "512M", "4096").
	Mem string `json:"mem,omitempty"`
	// Gres is sbatch --gres ("gpu:1").
	Gres string `json:"gres,omitempty"`
	// Account and QOS are sbatch --account and --qos.
	Account string `json:"account,omitempty"`
	QOS     string `json:"qos,omitempty"`
	// SbatchArgs are more sbatch options, one option per element with its
	// value joined ("--constraint=haswell", "--exclusive", "-N1"). They
	// come after bench's own options; those that would break the engine
	// (--wrap, --output, --array, ...) are refused.
	SbatchArgs []string `json:"sbatch_args,omitempty"`
	// MaxJobs is how many trials are submitted at once (default
	// num_trial_runners).
	MaxJobs int `json:"max_jobs,omitempty"`
}

// TimeLimit is a job time limit in Slurm's format ("" when unset).
type TimeLimit string

var slurmTime = regexp.MustCompile(`^(\d+-\d+(:\d+(:\d+)?)?|\d+(:\d+(:\d+)?)?)$`)

// UnmarshalJSON accepts seconds (a number), a Slurm time string or a Go
// duration with units.
func (t *TimeLimit) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("time_limit: %v", err)
	}
	switch x := v.(type) {
	case nil:
		*t = ""
		return nil
	case float64:
		d, err := decode.Seconds(x)
		if err != nil || d < time.Second {
			return fmt.Errorf("time_limit: want at least 1 second, got %v", x)
		}
		*t = TimeLimit(formatSeconds(d))
		return nil
	case string:
		s := strings.TrimSpace(x)
		switch {
		case strings.EqualFold(s, "UNLIMITED") || strings.EqualFold(s, "INFINITE"):
			*t = "UNLIMITED"
		case slurmTime.MatchString(s):
			*t = TimeLimit(s)
		default:
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Second {
				return fmt.Errorf("time_limit: %q is neither a Slurm time (\"30\" minutes, \"1:30:00\", \"2-00:00:00\") nor a duration like \"90s\" or \"1h30m\"", x)
			}
			*t = TimeLimit(formatSeconds(d))
		}
		return nil
	}
	return fmt.Errorf("time_limit: want a number of seconds or a string, got %s", b)
}

// formatSeconds writes a duration as Slurm's days-hours:minutes:seconds
// (whole seconds, rounded up).
func formatSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	days, s := s/86400, s%86400
	return fmt.Sprintf("%d-%02d:%02d:%02d", days, s/3600, s%3600/60, s%60)
}

var (
	memRE   = regexp.MustCompile(`(?i)^\d+[kmgt]?$`)
	jobIDRE = regexp.MustCompile(`^\d+(_\d+)?$`)
	nameBad = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// refused are sbatch options the engine sets itself or that would break
// it (long names; the short ones in refusedShort).
var (
	refused      = []string{"wrap", "output", "error", "input", "chdir", "job-name", "array", "parsable", "wait", "test-only"}
	refusedShort = "oeiDJaW"
)

func checkSbatchArg(a string) error {
	switch {
	case a == "--":
		return errors.New(`"--" would end sbatch's options`)
	case !strings.HasPrefix(a, "-") || a == "-":
		return fmt.Errorf("%q is not an option: write each option with its value joined, as \"--constraint=haswell\"", a)
	case strings.HasPrefix(a, "--"):
		name, _, _ := strings.Cut(a[2:], "=")
		for _, r := range refused {
			// sbatch takes unambiguous prefixes of long options.
			if strings.HasPrefix(r, name) && len(name) >= 3 || name == r {
				return fmt.Errorf("%q: bench sets --%s itself", a, r)
			}
		}
	default:
		if strings.ContainsRune(refusedShort, rune(a[1])) {
			return fmt.Errorf("%q: bench sets -%c itself", a, a[1])
		}
	}
	if strings.ContainsAny(a, "\n\r\x00") {
		return fmt.Errorf("%q: control characters", a)
	}
	return nil
}

// plain checks a value that goes into one sbatch option.
func plain(key, v string) error {
	if strings.TrimSpace(v) != v || strings.ContainsAny(v, " \t\n\r\x00") {
		return fmt.Errorf("config key %q: %q must not contain spaces or control characters", key, v)
	}
	return nil
}

func (c *Config) validate() error {
	for _, kv := range [][2]string{{"partition", c.Partition}, {"gres", c.Gres}, {"account", c.Account}, {"qos", c.QOS}, {"mem", c.Mem}} {
		if err := plain(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if c.Mem != "" && !memRE.MatchString(c.Mem) {
		return fmt.Errorf("config key \"mem\": %q: want a size like \"2G\", \"512M\" or \"4096\" (megabytes)", c.Mem)
	}
	if c.CPUsPerTask < 0 {
		return fmt.Errorf("config key \"cpus_per_task\": must be 1 or more, got %d", c.CPUsPerTask)
	}
	if c.MaxJobs < 0 {
		return fmt.Errorf("config key \"max_jobs\": must be 1 or more, got %d", c.MaxJobs)
	}
	for i, a := range c.SbatchArgs {
		if err := checkSbatchArg(a); err != nil {
			return fmt.Errorf("config key \"sbatch_args\"[%d]: %v", i, err)
		}
	}
	return nil
}

// Engine submits trials as Slurm batch jobs.
type Engine struct {
	common  engines.Common
	cfg     Config
	slots   int
	workdir string
	dir     string

	// The jobs being followed share squeue calls: one call reads them
	// all, at most about twice per poll_interval whatever the number of
	// slots (slurmctld answers every squeue; a loop per job would load
	// it with slots times as many).
	mu     sync.Mutex
	active map[string]time.Time // job id → last Poll
	last   *snapshot            // the latest finished squeue
	next   *snapshot            // the squeue under way
	// squeues counts squeue calls (tests).
	squeues atomic.Int64
}

// snapshot is one squeue of several jobs.
type snapshot struct {
	ids   map[string]bool
	at    time.Time
	infos map[string]info
	err   error
	done  chan struct{}
}

// ref is the Slurm engine's job reference: the job id ("123", or
// "123_4" for a task of an array) and its files.
type ref struct {
	JobID   string `json:"job_id"`
	Request string `json:"request,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Log     string `json:"log"`
}

// parseConfig decodes and checks the engine's own keys.
func parseConfig(m map[string]any) (Config, error) {
	var c Config
	if err := decode.Into(m, &c); err != nil {
		return c, err
	}
	return c, c.validate()
}

// New builds a Slurm engine. The workdir (default
// <dir>/.bench/slurm/<experiment>) must be on a file system the compute
// nodes share.
func New(_ context.Context, p engines.Params) (engines.Engine, error) {
	c, err := parseConfig(p.Config)
	if err != nil {
		return nil, err
	}
	e := &Engine{common: p.Common, cfg: c, slots: c.MaxJobs, dir: p.Dir, active: map[string]time.Time{}}
	if e.slots == 0 {
		e.slots = max(p.Slots, 1)
	}
	e.workdir = p.Common.WorkDir
	if e.workdir == "" {
		exp := nameBad.ReplaceAllString(p.ExperimentID, "_")
		if strings.Trim(exp, ".") == "" {
			exp = "_" + exp
		}
		e.workdir = filepath.Join(".bench", "slurm", exp)
	}
	if !filepath.IsAbs(e.workdir) {
		e.workdir = filepath.Join(p.Dir, e.workdir)
	}
	if p.ValidateOnly {
		// bench validate checks the config, not this host: a config is
		// often checked elsewhere than on the submit host it runs on.
		return e, nil
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		return nil, errors.New("sbatch is not on PATH: the Slurm engine runs Slurm's commands (sbatch, squeue, scontrol, scancel) on this machine, which must be a Slurm submit host")
	}
	if err := os.MkdirAll(e.workdir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	return e, nil
}

// Name is "slurm".
func (e *Engine) Name() string { return "slurm" }

// Slots is max_jobs.
func (e *Engine) Slots() int { return e.slots }

// Close releases nothing.
func (e *Engine) Close() error { return nil }

// WorkDir is the folder of the engine's requests, outcomes, scripts and
// logs.
func (e *Engine) WorkDir() string { return e.workdir }

// commandTimeout bounds one Slurm command (a controller that does not
// answer makes squeue retry for a long time).
const commandTimeout = 60 * time.Second

// errUnknownJob: the command says the job id is invalid.
var errUnknownJob = errors.New("unknown job")

// run runs a Slurm command and returns its stdout; its stderr goes into
// the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "Invalid job id") {
			return stdout.String(), fmt.Errorf("%s: %w: %s", name, errUnknownJob, msg)
		}
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if ctx.Err() == context.DeadlineExceeded {
			return stdout.String(), fmt.Errorf("%s did not answer within %s: %s", name, commandTimeout, msg)
		}
		if msg != "" {
			return stdout.String(), fmt.Errorf("%s: %v: %s", name, err, msg)
		}
		return stdout.String(), fmt.Errorf("%s: %v", name, err)
	}
	return stdout.String(), nil
}

// sbatchOptions are the resource options of every job.
func (e *Engine) sbatchOptions() []string {
	var o []string
	add := func(flag, v string) {
		if v != "" {
			o = append(o, "--"+flag+"="+v)
		}
	}
	add("partition", e.cfg.Partition)
	add("time", string(e.cfg.TimeLimit))
	if e.cfg.CPUsPerTask > 0 {
		add("cpus-per-task", strconv.Itoa(e.cfg.CPUsPerTask))
	}
	add("mem", e.cfg.Mem)
	add("gres", e.cfg.Gres)
	add("account", e.cfg.Account)
	add("qos", e.cfg.QOS)
	return append(o, e.cfg.SbatchArgs...)
}

// outputPattern escapes '%' in a path for sbatch --output (where %j and
// the like are replaced).
func outputPattern(p string) string { return strings.ReplaceAll(p, "%", "%%") }

// writeScript writes a batch script that execs argv.
func writeScript(path, comment string, argv []string) error {
	script := "#!/bin/sh\n# " + comment + " (written by bench's Slurm engine)\nexec " + engines.ShellLine(argv) + "\n"
	return os.WriteFile(path, []byte(script), 0o700)
}

// sbatch submits a script and returns the job id.
func (e *Engine) sbatch(ctx context.Context, opts []string, script string) (string, error) {
	args := append([]string{"--parsable"}, opts...)
	if e.dir != "" {
		args = append(args, "--chdir="+e.dir)
	}
	args = append(args, e.sbatchOptions()...)
	args = append(args, script)
	out, err := run(ctx, "sbatch", args...)
	if err != nil {
		return "", err
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if !jobIDRE.MatchString(id) {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// Submit writes the request and a batch script to the workdir and submits
// the script with sbatch, as a job named engines.SubmitName(job). A job of
// that name that Slurm already knows (a bench killed after sbatch, before
// the job was recorded with the trial) is taken instead of submitting the
// trial a second time.
func (e *Engine) Submit(ctx context.Context, job engines.Job) (engines.Ref, error) {
	name := nameBad.ReplaceAllString(job.Name, "_")
	jobName := engines.SubmitName(job)
	base := filepath.Join(e.workdir, fmt.Sprintf("%s.%d", name, job.Attempt))
	r := ref{Request: base + ".request.json", Outcome: base + ".outcome.json", Log: base + ".log"}
	// The request file is written before sbatch: without it, this attempt
	// was never submitted from this workdir, and Slurm is not asked.
	var id string
	if _, err := os.Stat(r.Request); err == nil {
		if id, err = e.submitted(ctx, jobName); err != nil {
			return nil, fmt.Errorf("looking for an earlier submission of job %s: %w", jobName, err)
		}
		if id != "" {
			r.JobID = id
			return json.Marshal(r)
		}
	}
	for _, f := range []string{r.Outcome, engines.ProgressPath(r.Outcome), r.Log} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(e.workdir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	if err := os.WriteFile(r.Request, job.Request, 0o600); err != nil {
		return nil, err
	}
	script := base + ".sh"
	if err := writeScript(script, fmt.Sprintf("trial job %s, attempt %d", name, job.Attempt), engines.Command(e.common.Bench, r.Request, r.Outcome)); err != nil {
		return nil, err
	}
	id, err := e.sbatch(ctx, []string{"--job-name=" + jobName, "--output=" + outputPattern(r.Log)}, script)
	if err != nil {
		return nil, err
	}
	r.JobID = id
	return json.Marshal(r)
}

// submitted returns the id of this user's latest job named name that
// Slurm knows (squeue while the controller holds it, then sacct when the
// cluster has accounting), "" when there is none.
func (e *Engine) submitted(ctx context.Context, name string) (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	out, err := run(ctx, "squeue", "-h", "-t", "all", "-u", u.Username, "-n", name, "-o", "%i")
	if err != nil {
		return "", err
	}
	if id := latestJob(strings.Fields(out)); id != "" {
		return id, nil
	}
	out, err = run(ctx, "sacct", "-n", "-P", "-X", "-u", u.Username, "--name="+name, "-S", "now-30days", "-o", "JobID")
	if err != nil {
		if strings.Contains(err.Error(), "accounting storage is disabled") {
			return "", nil
		}
		return "", err
	}
	return latestJob(strings.Fields(out)), nil
}

// latestJob returns the highest plain job id of a list ("" when none).
func latestJob(ids []string) string {
	best, bestN := "", int64(-1)
	for _, id := range ids {
		n, err := strconv.ParseInt(id, 10, 64)
		if err == nil && n > bestN {
			best, bestN = id, n
		}
	}
	return best
}

func decodeRef(raw engines.Ref) (ref, error) {
	var r ref
	if err := json.Unmarshal(raw, &r); err != nil || !jobIDRE.MatchString(r.JobID) {
		return r, fmt.Errorf("not a Slurm job reference: %s", raw)
	}
	return r, nil
}

// info is what Slurm says about a job.
type info struct {
	state, reason, exit string
	start, end          time.Time
}

// Poll reads the job's state: squeue while the controller knows the job,
// then scontrol, then sacct; a job none of them knows is Lost.
func (e *Engine) Poll(ctx context.Context, raw engines.Ref) (engines.State, error) {
	r, err := decodeRef(raw)
	if err != nil {
		return engines.State{}, err
	}
	in, known, err := e.queued(ctx, r.JobID)
	if err != nil {
		return engines.State{}, err
	}
	if known {
		if ph, ok := phase(in.state); ok && !ph.Final() {
			st := e.state(r, in, ph)
			if st.Phase.Final() {
				e.forget(r.JobID)
			}
			return st, nil
		}
	}
	e.forget(r.JobID)
	// Finished (or not in squeue): the details of the end.
	fin, fknown, err := scontrol(ctx, r.JobID)
	if err != nil {
		return engines.State{}, err
	}
	if !fknown {
		fin, fknown, err = sacct(ctx, r.JobID)
		if err != nil && !known {
			return engines.State{}, err
		}
	}
	switch {
	case fknown:
		in = fin
	case !known:
		return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("Slurm does not know job %s (squeue, scontrol and sacct)", r.JobID)}, nil
	}
	ph, ok := phase(in.state)
	if !ok {
		return engines.State{}, fmt.Errorf("job %s: unexpected Slurm job state %q", r.JobID, in.state)
	}
	return e.state(r, in, ph), nil
}

// state builds a State from what Slurm said.
func (e *Engine) state(r ref, in info, ph engines.Phase) engines.State {
	var size int64
	if fi, err := os.Stat(r.Log); err == nil {
		size = fi.Size()
	}
	st := engines.State{Phase: ph, Progress: fmt.Sprintf("%s/%d", in.state, size)}
	if ph != engines.Queued {
		st.Started = in.start
	}
	if ph.Final() {
		st.Ended = in.end
	}
	// bench exec-trial writes the outcome file last: once it is there,
	// the command's work is over. The job is Done without waiting for
	// Slurm to end it (half a second or more, in which the slot would
	// idle), and Done when its script then exited non-zero (bench
	// exec-trial exits 0 whenever it writes an outcome, a wrapper may
	// not). Before Slurm's end, Ended is when the outcome was written.
	// Only a SUCCEEDED outcome is trusted before Slurm's final state:
	// Slurm signals a job at its time limit (TIMEOUT), on scancel
	// (CANCELLED) and on preemption (PREEMPTED), and only Slurm knows which
	// it was (Runner.result). The signal may reach the trial's processes
	// before bench exec-trial, whose outcome then says the script failed
	// (exit 143) without naming a signal.
	if (!ph.Final() || in.state == "FAILED") && r.Outcome != "" {
		if b, err := os.ReadFile(r.Outcome); err == nil && trusted(b) {
			st.Phase = engines.Done
			if st.Ended.IsZero() {
				if fi, err := os.Stat(r.Outcome); err == nil {
					st.Ended = fi.ModTime()
				}
			}
		}
	}
	if st.Phase == engines.Failed || st.Phase == engines.TimedOut {
		reason := "Slurm job " + r.JobID + " " + in.state
		if in.reason != "" && in.reason != "None" {
			reason += ", reason " + in.reason
		}
		if in.exit != "" && in.exit != "0:0" {
			reason += ", exit code " + in.exit
		}
		st.Reason = reason
	}
	return st
}

// trusted reports whether an outcome file may be taken for the job's end
// before Slurm ends the job: a SUCCEEDED outcome no signal stopped.
func trusted(b []byte) bool {
	if engines.Interrupted(b) != "" {
		return false
	}
	out, err := engines.DecodeOutcome(b)
	return err == nil && out.Status == trial.SUCCEEDED
}

// forget stops following a job that ended.
func (e *Engine) forget(id string) {
	e.mu.Lock()
	delete(e.active, id)
	e.mu.Unlock()
}

// queued returns what squeue says about a job: from a squeue of every
// followed job that started less than half a poll_interval ago, or from
// the one under way, or from a new one.
func (e *Engine) queued(ctx context.Context, id string) (info, bool, error) {
	now := time.Now()
	fresh := e.common.PollInterval.Std() / 2
	e.mu.Lock()
	e.active[id] = now
	s := e.last
	if s == nil || !s.ids[id] || now.Sub(s.at) >= fresh {
		s = e.next
		if s == nil || !s.ids[id] {
			s = e.startSqueue(now)
		}
	}
	e.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		return info{}, false, ctx.Err()
	}
	if s.err != nil {
		return info{}, false, s.err
	}
	in, ok := s.infos[id]
	return in, ok, nil
}

// startSqueue starts a squeue of the followed jobs (e.mu held). Jobs not
// polled for a while (their runner stopped following them) are dropped.
func (e *Engine) startSqueue(now time.Time) *snapshot {
	stale := max(time.Minute, 10*e.common.PollInterval.Std())
	s := &snapshot{ids: map[string]bool{}, at: now, done: make(chan struct{})}
	ids := make([]string, 0, len(e.active))
	for id, at := range e.active {
		if now.Sub(at) > stale {
			delete(e.active, id)
			continue
		}
		s.ids[id] = true
		ids = append(ids, id)
	}
	sort.Strings(ids)
	e.next = s
	go func() {
		// Not the caller's ctx: other polls wait for this squeue too.
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		defer cancel()
		e.squeues.Add(1)
		s.infos, s.err = squeue(ctx, ids)
		e.mu.Lock()
		if e.next == s {
			e.next = nil
		}
		if s.err == nil && (e.last == nil || e.last.at.Before(s.at)) {
			e.last = s
		}
		e.mu.Unlock()
		close(s.done)
	}()
	return s
}

// phase maps a Slurm job state to a Phase.
func phase(state string) (engines.Phase, bool) {
	switch state {
	case "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
		// Suspended or stopped jobs wait for the scheduler, like queued
		// ones: they are not hanging.
		"SUSPENDED", "STOPPED":
		return engines.Queued, true
	case "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING":
		return engines.Running, true
	case "COMPLETED":
		return engines.Done, true
	case "TIMEOUT":
		return engines.TimedOut, true
	case "FAILED", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT":
		return engines.Failed, true
	}
	return 0, false
}

// squeue asks the controller about jobs (finished ones included while it
// holds them); jobs it does not know are absent from the map.
func squeue(ctx context.Context, ids []string) (map[string]info, error) {
	infos := map[string]info{}
	// -r: one line per array task.
	out, err := run(ctx, "squeue", "-h", "-r", "-t", "all", "-j", strings.Join(ids, ","), "-o", "%i|%T|%r|%S|%e")
	if errors.Is(err, errUnknownJob) {
		// A single unknown id is an error; in a list it is only absent.
		return infos, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 5 {
			continue
		}
		infos[f[0]] = info{state: f[1], reason: f[2], start: slurmTimeOf(f[3]), end: slurmTimeOf(f[4])}
	}
	return infos, nil
}

// scontrol reads a job's record from the controller (kept MinJobAge after
// it ends).
func scontrol(ctx context.Context, id string) (info, bool, error) {
	out, err := run(ctx, "scontrol", "show", "job", "-o", id)
	if errors.Is(err, errUnknownJob) {
		return info{}, false, nil
	}
	if err != nil {
		return info{}, false, err
	}
	line := strings.TrimSpace(out)
	if line == "" || strings.HasPrefix(line, "No jobs") {
		return info{}, false, nil
	}
	// One line per job; for an array the task's own line.
	lines := strings.Split(line, "\n")
	line = lines[0]
	if jobID, task, ok := strings.Cut(id, "_"); ok {
		for _, l := range lines {
			if kv := fields(l); kv["ArrayJobId"] == jobID && kv["ArrayTaskId"] == task {
				line = l
			}
		}
	}
	kv := fields(line)
	st := kv["JobState"]
	if st == "" {
		return info{}, false, fmt.Errorf("scontrol show job %s: no JobState in %q", id, line)
	}
	return info{state: st, reason: kv["Reason"], exit: kv["ExitCode"], start: slurmTimeOf(kv["StartTime"]), end: slurmTimeOf(kv["EndTime"])}, true, nil
}

// fields splits scontrol's one-line "Key=Value Key=Value" output. Values
// with spaces (rare: a Command with arguments) keep only their first
// word, which is enough for the keys read here.
func fields(line string) map[string]string {
	kv := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if _, dup := kv[k]; !dup {
				kv[k] = v
			}
		}
	}
	return kv
}

// sacct reads a job from accounting storage. A cluster without it knows
// nothing (not an error).
func sacct(ctx context.Context, id string) (info, bool, error) {
	out, err := run(ctx, "sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State,Reason,ExitCode,Start,End")
	if err != nil {
		if strings.Contains(err.Error(), "accounting storage is disabled") {
			return info{}, false, nil
		}
		return info{}, false, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 || f[0] != id {
			continue
		}
		// "CANCELLED by 1000"
		st, _, _ := strings.Cut(f[1], " ")
		return info{state: st, reason: f[2], exit: f[3], start: slurmTimeOf(f[4]), end: slurmTimeOf(f[5])}, true, nil
	}
	return info{}, false, nil
}

// slurmTimeOf parses Slurm's local times ("2026-11-23T23:33:41"); "N/A",
// "Unknown" and "None" are zero.
func slurmTimeOf(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Fetch reads the outcome file (nil when there is none) and the log's
// tail.
func (e *Engine) Fetch(_ context.Context, raw engines.Ref) (engines.Result, error) {
	r, err := decodeRef(raw)
	if err != nil {
		return engines.Result{}, err
	}
	var res engines.Result
	if r.Outcome != "" {
		if b, err := os.ReadFile(r.Outcome); err == nil {
			res.Outcome = b
		} else if !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
	}
	res.Log = engines.LogTail(r.Log, 4096)
	return res, nil
}

// Cancel runs scancel; a job that ended or that Slurm forgot is not an
// error.
func (e *Engine) Cancel(ctx context.Context, raw engines.Ref) error {
	r, err := decodeRef(raw)
	if err != nil {
		return err
	}
	_, err = run(ctx, "scancel", r.JobID)
	if err != nil && !errors.Is(err, errUnknownJob) && !strings.Contains(err.Error(), "already completing or completed") {
		return err
	}
	return nil
}

// SubmitPilots submits one job array of count tasks, each running argv.
func (e *Engine) SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]engines.Ref, error) {
	if count < 1 {
		return nil, fmt.Errorf("pilot count must be 1 or more, got %d", count)
	}
	if len(argv) == 0 {
		return nil, errors.New("pilots need a command")
	}
	name = nameBad.ReplaceAllString(name, "_")
	if err := os.MkdirAll(e.workdir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	script := filepath.Join(e.workdir, name+".pilot.sh")
	if err := writeScript(script, "pilot workers "+name, argv); err != nil {
		return nil, err
	}
	logs := filepath.Join(e.workdir, name)
	id, err := e.sbatch(ctx, []string{"--job-name=" + name, "--array=1-" + strconv.Itoa(count),
		"--output=" + outputPattern(logs) + ".%A_%a.log"}, script)
	if err != nil {
		return nil, err
	}
	refs := make([]engines.Ref, 0, count)
	for i := 1; i <= count; i++ {
		task := fmt.Sprintf("%s_%d", id, i)
		b, err := json.Marshal(ref{JobID: task, Log: logs + "." + task + ".log"})
		if err != nil {
			return nil, err
		}
		refs = append(refs, b)
	}
	return refs, nil
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.PilotSubmitter = (*Engine)(nil)
)

// ReadProgress reads the job's progress file in the shared folder
// (engines.ProgressReader).
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

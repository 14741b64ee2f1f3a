// Package sshpool is the SSH host pool execution engine
// (bench.engines.SSHPoolEngine): trials run as `bench exec-trial` on a
// list of hosts reached over SSH, each host taking a number of trials at
// once. A job's request is uploaded over SFTP and its command started
// detached from the SSH connection (services/ssh's detached runs), so
// that it survives a dropped connection and a restart of bench; Poll reads
// its state with one command, Fetch reads its outcome file and its log's
// tail. A host whose connections or submissions keep failing is set aside
// for a while and jobs go to the other hosts. See docs/engines-ssh-pool.md.
package sshpool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/ssh"
)

// Class names.
const (
	Class     = "bench.engines.SSHPoolEngine"
	ClassFull = "bench.engines.ssh_pool.SSHPoolEngine"
)

func init() {
	engines.Register(factory, Class, ClassFull)
}

// Bounds of what Fetch reads back.
const (
	maxOutcomeBytes = 64 << 20
	logTailBytes    = 64 << 10
)

// startGrace is how long a submitted job may take to show that it started
// before Poll declares it lost.
const startGrace = 60 * time.Second

// livenessEvery is how often Poll checks that a running job's processes
// are still there (a command on the host); in between it reads the job's
// files over SFTP only, which starts no process there.
const livenessEvery = 5 * time.Second

// Engine is the SSH host pool. It is safe for concurrent use.
type Engine struct {
	svc         *ssh.HostService
	hosts       []*host
	byAddr      map[string]*host
	common      engines.Common
	maxFailures int
	cooldown    time.Duration
	uploadBench bool
	slots       int
	experiment  string
	driverDir   string

	mu      sync.Mutex
	changed chan struct{}        // closed and replaced when a slot frees or a host changes
	jobs    map[string]string    // job name → key of its latest run
	checked map[string]time.Time // run key → last check of its processes
	closed  bool

	bg       sync.WaitGroup // background kills of superseded runs
	bgCtx    context.Context
	bgCancel context.CancelFunc

	prepOnce sync.Once // prepareAll

	exeOnce sync.Once
	exePath string
	exeHash string
	exeErr  error
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.PilotSubmitter = (*Engine)(nil)
)

// host is one host of the pool.
type host struct {
	addr  string // user@host:port, as stored in refs
	h     *ssh.Host
	slots int
	cfg   HostConfig

	// Guarded by Engine.mu.
	busy       map[string]bool // keys of the runs holding a slot here
	failures   int             // consecutive failures
	asideUntil time.Time
	lastErr    error

	prepMu  sync.Mutex // serializes prepare
	prepped bool
	workdir string // absolute
	bench   string // the far side's bench
	// runs lists the run directories (base names) found in workdir when
	// the engine first reached the host: jobs an earlier bench started.
	runs map[string]bool
}

// ref is a job's handle (engines.Ref).
type ref struct {
	Host      string    `json:"host"`
	Run       string    `json:"run"`
	Request   string    `json:"request,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	Log       string    `json:"log"`
	Exit      string    `json:"exit"`
	Job       string    `json:"job"`
	Attempt   int       `json:"attempt"`
	Submitted time.Time `json:"submitted"`
}

func (r ref) key() string { return r.Host + "\x00" + r.Run }

func factory(_ context.Context, p engines.Params) (engines.Engine, error) {
	cfg, err := ParseConfig(p.Config)
	if err != nil {
		return nil, err
	}
	cfg.ExperimentID, cfg.DriverDir = p.ExperimentID, p.Dir
	return New(cfg, p.Common)
}

// New returns a pool with the given settings; common holds the common
// engine keys with their defaults filled in.
func New(cfg Config, common engines.Common) (*Engine, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("the SSH pool has no hosts")
	}
	scfg := ssh.DefaultConfig()
	scfg.KnownHostsPath = cfg.KnownHostsFile
	scfg.InsecureIgnoreHostKey = !cfg.StrictHostKeyChecking
	scfg.ConnectTimeout = cfg.ConnectTimeout
	scfg.Shell = "/bin/sh"
	svc, err := ssh.NewHostService(scfg)
	if err != nil {
		return nil, err
	}
	if cfg.MaxHostFailures < 1 {
		cfg.MaxHostFailures = DefaultMaxHostFailures
	}
	e := &Engine{
		svc:         svc,
		byAddr:      map[string]*host{},
		common:      common,
		maxFailures: cfg.MaxHostFailures,
		cooldown:    cfg.HostCooldown,
		uploadBench: cfg.UploadBench,
		experiment:  cfg.ExperimentID,
		driverDir:   cfg.DriverDir,
		changed:     make(chan struct{}),
		jobs:        map[string]string{},
		checked:     map[string]time.Time{},
	}
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	for _, hc := range cfg.Hosts {
		params := services.Params{"ssh_hostname": hc.Host, "ssh_port": hc.Port}
		if hc.User != "" {
			params["ssh_username"] = hc.User
		}
		if hc.KeyFile != "" {
			params["ssh_priv_key_path"] = hc.KeyFile
		}
		sh, err := svc.Host(params)
		if err != nil {
			_ = svc.Close()
			return nil, err
		}
		h := &host{addr: sh.String(), h: sh, slots: hc.Slots, cfg: hc, busy: map[string]bool{}}
		if _, dup := e.byAddr[h.addr]; dup {
			_ = svc.Close()
			return nil, fmt.Errorf("host %s is listed twice; give it more slots instead", h.addr)
		}
		e.hosts = append(e.hosts, h)
		e.byAddr[h.addr] = h
		e.slots += hc.Slots
	}
	return e, nil
}

// Name is the engine's name in trial handles.
func (e *Engine) Name() string { return "ssh" }

// Slots is the sum of the hosts' slots.
func (e *Engine) Slots() int { return e.slots }

// Close closes the SSH connections; jobs on the hosts go on.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.bgCancel()
	e.bg.Wait()
	return e.svc.Close()
}

// CloseConnections closes the cached SSH connections (the next call
// reconnects); jobs on the hosts go on.
func (e *Engine) CloseConnections() { e.svc.CloseConnections() }

// broadcast wakes Submits waiting for a slot. Call with e.mu held.
func (e *Engine) broadcast() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// usable reports whether h may take new jobs now. Call with e.mu held.
func (h *host) usable(now time.Time) bool { return !now.Before(h.asideUntil) }

// hold takes a slot on h for key. Call with e.mu held.
func (e *Engine) hold(h *host, job, key string) {
	h.busy[key] = true
	if job != "" {
		e.jobs[job] = key
	}
}

// release frees key's slot, wherever it is held.
func (e *Engine) release(r ref) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseLocked(r.Host, r.key(), r.Job)
}

func (e *Engine) releaseLocked(addr, key, job string) {
	delete(e.checked, key)
	if h := e.byAddr[addr]; h != nil && h.busy[key] {
		delete(h.busy, key)
		e.broadcast()
	}
	if job != "" && e.jobs[job] == key {
		delete(e.jobs, job)
	}
}

// noteResult records the outcome of an operation on h for its health:
// a success clears its failures (and brings a set-aside host back), a
// failure counts, and max_host_failures in a row (or one that no retry
// can fix) set the host aside for host_cooldown.
func (e *Engine) noteResult(ctx context.Context, h *host, err error) {
	if err != nil && ctx.Err() != nil {
		return // our own cancellation says nothing about the host
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if err == nil {
		if h.failures > 0 || !h.usable(now) {
			if !h.asideUntil.IsZero() {
				slog.Info("ssh pool: host is back", "host", h.addr)
				e.broadcast()
			}
			h.failures, h.asideUntil, h.lastErr = 0, time.Time{}, nil
		}
		return
	}
	h.failures++
	h.lastErr = err
	if (h.failures >= e.maxFailures || ssh.IsPermanent(err)) && h.usable(now) {
		h.asideUntil = now.Add(e.cooldown)
		slog.Warn("ssh pool: setting a host aside", "host", h.addr, "failures_in_a_row", h.failures,
			"until", h.asideUntil.Format(time.RFC3339), "err", err)
		e.broadcast()
	}
}

// errNoHost explains why no host can take a job. Call with e.mu held.
func (e *Engine) errNoHost(now time.Time) error {
	var why []string
	for _, h := range e.hosts {
		why = append(why, fmt.Sprintf("%s set aside until %s after %d failures in a row (last: %v)",
			h.addr, h.asideUntil.Format(time.RFC3339), h.failures, h.lastErr))
	}
	return fmt.Errorf("no usable host in the SSH pool: %s", strings.Join(why, "; "))
}

// errAllTried: every usable host was tried by this call.
var errAllTried = errors.New("every usable host failed")

// pick reserves a slot (under key <host>\x00pending:<pending>) on the best
// usable host not in tried: the fewest failures in a row, then the
// smallest share of slots in use, then the most free slots. It waits
// while those hosts are all full. It fails when no host is usable
// (errNoHost) or every usable host is in tried (errAllTried).
func (e *Engine) pick(ctx context.Context, tried map[*host]bool, job, pending string) (*host, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, errors.New("the SSH pool engine is closed")
		}
		now := time.Now()
		var best *host
		anyUsable, anyLeft := false, false
		for _, h := range e.hosts {
			if !h.usable(now) {
				continue
			}
			anyUsable = true
			if tried[h] {
				continue
			}
			anyLeft = true
			if len(h.busy) >= h.slots {
				continue
			}
			if best == nil || better(h, best) {
				best = h
			}
		}
		switch {
		case !anyUsable:
			err := e.errNoHost(now)
			e.mu.Unlock()
			return nil, err
		case !anyLeft:
			e.mu.Unlock()
			return nil, errAllTried
		case best != nil:
			e.hold(best, job, best.addr+"\x00pending:"+pending)
			e.mu.Unlock()
			return best, nil
		}
		wait := e.changed
		// A set-aside host comes back when its cooldown ends.
		next := time.Hour
		for _, h := range e.hosts {
			if !h.usable(now) {
				next = min(next, h.asideUntil.Sub(now))
			}
		}
		e.mu.Unlock()
		t := time.NewTimer(next)
		select {
		case <-wait:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		}
		t.Stop()
	}
}

// better reports whether host a should take a job before host b. Call
// with e.mu held.
func better(a, b *host) bool {
	if a.failures != b.failures {
		return a.failures < b.failures
	}
	// Shares of slots in use: len(a.busy)/a.slots vs len(b.busy)/b.slots.
	if l, r := len(a.busy)*b.slots, len(b.busy)*a.slots; l != r {
		return l < r
	}
	return a.slots-len(a.busy) > b.slots-len(b.busy)
}

// place runs submit on the best host with a free slot, and on the next
// ones when it fails there (each failure counts against its host). It
// returns the host submit succeeded on, with its slot still held under
// the pending key; the caller re-keys it.
func (e *Engine) place(ctx context.Context, what, job, pending string, submit func(*host) error) (*host, error) {
	tried := map[*host]bool{}
	var lastErr error
	for {
		h, err := e.pick(ctx, tried, job, pending)
		if err != nil {
			if errors.Is(err, errAllTried) {
				// Hosts remain usable: the runner may try again at once.
				return nil, fmt.Errorf("%w (%w)", lastErr, engines.ErrRetryElsewhere)
			}
			if lastErr != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("%w (last: %v)", err, lastErr)
			}
			return nil, err
		}
		err = submit(h)
		e.noteResult(ctx, h, err)
		if err == nil {
			return h, nil
		}
		e.mu.Lock()
		e.releaseLocked(h.addr, h.addr+"\x00pending:"+pending, job)
		e.mu.Unlock()
		err = fmt.Errorf("submitting %s to %s: %w", what, h.addr, err)
		if ctx.Err() != nil {
			return nil, err
		}
		slog.Warn("ssh pool: submission failed; trying another host", "job", what, "host", h.addr, "err", err)
		lastErr = err
		tried[h] = true
	}
}

var (
	safeName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,200}$`)
	jobNameBad = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// Submit uploads the job's request to a free slot's host and starts
// `bench exec-trial` there, detached. When that fails on a host, the
// other usable hosts are tried in turn; once all have failed the error
// wraps engines.ErrRetryElsewhere while some host is still usable.
func (e *Engine) Submit(ctx context.Context, job engines.Job) (engines.Ref, error) {
	if !safeName.MatchString(job.Name) || strings.HasPrefix(job.Name, ".") {
		return nil, fmt.Errorf("job name %q: want letters, digits, '-', '_' and '.' only (engines.JobName)", job.Name)
	}
	if job.Attempt < 0 {
		return nil, fmt.Errorf("job %s: negative attempt %d", job.Name, job.Attempt)
	}
	e.supersede(job.Name)
	base := fmt.Sprintf("%s.%d", job.Name, job.Attempt)
	// A bench killed between starting a job and recording it submits it
	// again after its restart: the run may already be on a host.
	e.prepareAll(ctx)
	if h, r, ok := e.adoptEarlier(ctx, base, job); ok {
		e.mu.Lock()
		e.hold(h, job.Name, r.key())
		e.mu.Unlock()
		return json.Marshal(r)
	}
	var r ref
	// The slot is held under a provisional key until the run directory
	// is known.
	h, err := e.place(ctx, base, job.Name, base, func(h *host) error { return e.submitOn(ctx, h, base, job, &r) })
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.releaseLocked(h.addr, h.addr+"\x00pending:"+base, job.Name)
	e.hold(h, job.Name, r.key())
	e.mu.Unlock()
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	slog.Debug("ssh pool: submitted", "job", base, "host", h.addr, "run", r.Run)
	return b, nil
}

// supersede frees the slot of an earlier launch of the same job (a
// relaunch after it was lost or hung) and stops that run in the
// background, where its host can still be reached.
func (e *Engine) supersede(job string) {
	e.mu.Lock()
	key, ok := e.jobs[job]
	if !ok {
		e.mu.Unlock()
		return
	}
	addr, run, _ := strings.Cut(key, "\x00")
	e.releaseLocked(addr, key, job)
	h := e.byAddr[addr]
	e.mu.Unlock()
	if h == nil || strings.HasPrefix(run, "pending:") {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		ctx, cancel := context.WithTimeout(e.bgCtx, time.Minute)
		defer cancel()
		if err := h.h.KillDetached(ctx, run); err != nil {
			slog.Debug("ssh pool: could not stop a superseded run", "host", addr, "run", run, "err", err)
		}
	}()
}

// submitOn writes the request and starts the job on h; r is filled in.
func (e *Engine) submitOn(ctx context.Context, h *host, base string, job engines.Job, r *ref) error {
	if err := e.prepare(ctx, h); err != nil {
		return err
	}
	*r = e.refOn(h, base, job)
	if err := h.h.WriteFile(ctx, r.Request, job.Request, 0o600); err != nil {
		return err
	}
	// A stale outcome (an earlier life of the same job and attempt) must
	// not be taken for this run's.
	if err := h.h.RemoveAll(ctx, r.Outcome); err != nil {
		return err
	}
	script := "exec 2>&1\nexec " + engines.ShellLine(engines.Command(h.bench, r.Request, r.Outcome)) + "\n"
	return e.start(ctx, h, r.Run, script)
}

// refOn is the handle of job's run on h (h prepared).
func (e *Engine) refOn(h *host, base string, job engines.Job) ref {
	r := ref{
		Host:      h.addr,
		Run:       path.Join(h.workdir, base+".run"),
		Request:   path.Join(h.workdir, base+".request.json"),
		Outcome:   path.Join(h.workdir, base+".outcome.json"),
		Job:       job.Name,
		Attempt:   job.Attempt,
		Submitted: time.Now().UTC(),
	}
	r.Log = path.Join(r.Run, "stdout")
	r.Exit = path.Join(r.Run, "exit")
	return r
}

// sameRunThere reports whether r's run directory on h holds a started
// run of the same request (the same trial, values, arguments and folder;
// the driver's claim and runner id may differ).
func (e *Engine) sameRunThere(ctx context.Context, h *host, r ref, request []byte) (bool, error) {
	st, err := h.h.PeekDetached(ctx, r.Run)
	if err != nil || !st.Started {
		return false, err
	}
	old, err := h.h.ReadFile(ctx, r.Request, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return sameRequest(old, request), nil
}

// sameRequest compares two requests' JSON without their owner and runner
// id.
func sameRequest(a, b []byte) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	for _, k := range []string{"owner", "trial_runner_id"} {
		delete(ma, k)
		delete(mb, k)
	}
	return reflect.DeepEqual(ma, mb)
}

// start starts script detached in run; a run directory left by an
// earlier life of the same job and attempt is stopped and replaced. A
// start that fails after the launch may have happened is undone, so that
// the job never runs twice.
func (e *Engine) start(ctx context.Context, h *host, run, script string) error {
	err := h.h.StartDetached(ctx, run, script)
	if errors.Is(err, ssh.ErrRunDirInUse) {
		slog.Info("ssh pool: replacing an earlier run of the same job", "host", h.addr, "run", run)
		if err := h.h.KillDetached(ctx, run); err != nil {
			return err
		}
		if err := h.h.RemoveAll(ctx, run); err != nil {
			return err
		}
		err = h.h.StartDetached(ctx, run, script)
	}
	if err != nil && !errors.Is(err, ssh.ErrRunDirInUse) {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if kerr := h.h.KillDetached(kctx, run); kerr != nil {
			slog.Warn("ssh pool: a failed start could not be undone; the job may run there", "host", h.addr, "run", run, "err", kerr)
		}
	}
	return err
}

// prepare resolves h's work folder and bench once, uploading this bench
// binary when upload_bench is set and the host lacks the configured one.
func (e *Engine) prepare(ctx context.Context, h *host) error {
	h.prepMu.Lock()
	defer h.prepMu.Unlock()
	if h.prepped {
		return nil
	}
	home, err := h.h.Home(ctx)
	if err != nil {
		return err
	}
	wd := h.cfg.WorkDir
	if wd == "" {
		wd = e.common.WorkDir
	}
	if wd == "" {
		wd = DefaultWorkDir
		if e.experiment != "" {
			wd = path.Join(wd, jobNameBad.ReplaceAllString(e.experiment, "_"))
		}
	}
	wd = strings.TrimPrefix(wd, "~/")
	if wd == "~" {
		wd = "."
	}
	if !path.IsAbs(wd) {
		wd = path.Join(home, wd)
	}
	bench := h.cfg.Bench
	if bench == "" {
		bench = e.common.Bench
	}
	if bench == "" {
		bench = "bench"
	}
	if e.uploadBench {
		has, err := hasCommand(ctx, h.h, bench)
		if err != nil {
			return err
		}
		if !has {
			if bench, err = e.uploadTo(ctx, h, wd); err != nil {
				return err
			}
		}
	}
	runs := map[string]bool{}
	infos, err := h.h.ReadDir(ctx, wd)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, fi := range infos {
		if name, ok := strings.CutSuffix(fi.Name(), ".run"); ok && fi.IsDir() {
			runs[name] = true
		}
	}
	h.workdir, h.bench, h.runs, h.prepped = wd, bench, runs, true
	return nil
}

// prepareAll prepares every usable host at once (bounded by a minute),
// so that Submit knows where an earlier bench left runs.
func (e *Engine) prepareAll(ctx context.Context) {
	e.prepOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		now := time.Now()
		for _, h := range e.hosts {
			e.mu.Lock()
			usable := h.usable(now)
			e.mu.Unlock()
			if !usable {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := e.prepare(ctx, h)
				e.noteResult(ctx, h, err)
				if err != nil {
					slog.Warn("ssh pool: cannot reach a host", "host", h.addr, "err", err)
				}
			}()
		}
		wg.Wait()
	})
}

// adoptEarlier looks for base's run left by an earlier bench on any
// usable host and, when it holds the same request, takes it as the job.
func (e *Engine) adoptEarlier(ctx context.Context, base string, job engines.Job) (*host, ref, bool) {
	now := time.Now()
	for _, h := range e.hosts {
		h.prepMu.Lock()
		found := h.prepped && h.runs[base]
		h.prepMu.Unlock()
		e.mu.Lock()
		usable := h.usable(now)
		e.mu.Unlock()
		if !found || !usable {
			continue
		}
		r := e.refOn(h, base, job)
		same, err := e.sameRunThere(ctx, h, r, job.Request)
		e.noteResult(ctx, h, err)
		if err == nil && same {
			slog.Info("ssh pool: the job already runs (or ran) on a host with the same request; re-attaching to it",
				"job", base, "host", h.addr, "run", r.Run)
			return h, r, true
		}
	}
	return nil, ref{}, false
}

// hasCommand reports whether bench names an executable on the host.
func hasCommand(ctx context.Context, h *ssh.Host, bench string) (bool, error) {
	res, err := h.Command(ctx, "command -v "+engines.ShellQuote(bench)+" >/dev/null 2>&1 && test -x \"$(command -v "+engines.ShellQuote(bench)+")\"")
	if err != nil {
		return false, err
	}
	return res.ExitCode == 0, nil
}

// uploadTo copies this bench binary to workdir/bench-<hash> on h (once:
// a file of the same name and size is taken as uploaded) and returns its
// path.
func (e *Engine) uploadTo(ctx context.Context, h *host, workdir string) (string, error) {
	e.exeOnce.Do(func() {
		e.exePath, e.exeErr = os.Executable()
		if e.exeErr != nil {
			return
		}
		f, err := os.Open(e.exePath)
		if err != nil {
			e.exeErr = err
			return
		}
		defer f.Close()
		sum := sha256.New()
		if _, err := io.Copy(sum, f); err != nil {
			e.exeErr = err
			return
		}
		e.exeHash = hex.EncodeToString(sum.Sum(nil))[:16]
	})
	if e.exeErr != nil {
		return "", fmt.Errorf("upload_bench: finding this bench binary: %w", e.exeErr)
	}
	res, err := h.h.Command(ctx, "uname -sm")
	if err != nil {
		return "", err
	}
	if got, want := strings.ToLower(strings.TrimSpace(res.Stdout)), unameOf(runtime.GOOS, runtime.GOARCH); want != "" && got != want {
		return "", fmt.Errorf("upload_bench: the host runs %q but this bench binary is for %s/%s; install a bench built for the host and set \"bench\" to its path",
			strings.TrimSpace(res.Stdout), runtime.GOOS, runtime.GOARCH)
	}
	dst := path.Join(workdir, "bench-"+e.exeHash)
	local, err := os.Stat(e.exePath)
	if err != nil {
		return "", err
	}
	if info, err := h.h.Stat(ctx, dst); err == nil && info.Size() == local.Size() {
		return dst, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	slog.Info("ssh pool: uploading this bench binary", "host", h.addr, "to", dst, "bytes", local.Size())
	if err := h.h.UploadFile(ctx, e.exePath, dst); err != nil {
		return "", fmt.Errorf("upload_bench: %w", err)
	}
	return dst, nil
}

// unameOf is `uname -sm` (lower case) for a Go platform; "" when unsure.
func unameOf(goos, goarch string) string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[goarch]
	if goos != "linux" || arch == "" {
		return ""
	}
	return "linux " + arch
}

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

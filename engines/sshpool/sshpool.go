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
	"errors"
	"fmt"
	"log/slog"
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
	envLines    string // the pool's "env", exported before each job's command (env.go)

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
		envLines:    envLines(cfg.Env), // env.go
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

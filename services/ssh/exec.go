package ssh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"github.com/benchtune/bench/internal/shellenv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/benchtune/bench/services"
)

// runsDir is where runs keep their files, relative to the login directory.
const runsDir = ".bench/runs"

// tuning holds the timings of the detached-run protocol; tests shorten
// them.
type tuning struct {
	pollMin, pollMax time.Duration // output polling interval bounds
	reconnectWindow  time.Duration // how long to keep reconnecting
	startGrace       time.Duration // how long a start may take to show
	livenessEvery    time.Duration // how often to check that the script still runs
	opTimeout        time.Duration // bound of one control operation
	cleanupTimeout   time.Duration // bound of kill and cleanup after an abort
	killGrace        time.Duration // SIGTERM to SIGKILL
	headBytes        int           // output kept from the start, per stream
	tailBytes        int           // output kept from the end, per stream
}

func defaultTuning() tuning {
	return tuning{
		pollMin:         20 * time.Millisecond,
		pollMax:         time.Second,
		reconnectWindow: 2 * time.Minute,
		startGrace:      30 * time.Second,
		livenessEvery:   10 * time.Second,
		opTimeout:       time.Minute,
		cleanupTimeout:  time.Minute,
		killGrace:       5 * time.Second,
		headBytes:       defaultHeadBytes,
		tailBytes:       defaultTailBytes,
	}
}

// run is one RemoteExec in progress.
type run struct {
	svc       *HostService
	t         target
	id        string
	name      string
	dir       string // absolute path of the run directory on the host
	script    string
	connected bool // a connection was made during this run

	stdout, stderr   *capture.Buffer
	liveOut, liveErr *lineWriter
	offOut, offErr   int64
	startedAt        time.Time
	sawStart         bool
	activity         *services.Activity // touched when output arrives; nil-safe
}

// RemoteExec runs the script on the host named by the ssh_hostname
// parameter. The script runs detached from the SSH connection (see
// docs/ssh.md): a dropped connection is re-established and the output
// read on from where it stopped, and the script is never started twice.
// A non-zero exit code is not an error. Errors: the script could not be
// started or followed, it ran past req.Timeout, ssh_request_timeout or the
// context's deadline (wraps services.ErrTimeout), or the context was
// cancelled (wraps context.Canceled); the remote process group is killed in
// both cases and the output so far is returned with the error.
func (s *HostService) RemoteExec(ctx context.Context, req services.RemoteExecRequest) (services.ExecResult, error) {
	t, err := s.cfg.resolveTarget(req.Params)
	if err != nil {
		return services.ExecResult{ExitCode: -1}, fmt.Errorf("SshHostService: %w", err)
	}
	script, err := shellenv.Script(req.Env, req.Script)
	if err != nil {
		return services.ExecResult{ExitCode: -1}, fmt.Errorf("SshHostService on %s: %w", t, err)
	}
	limit := req.Timeout
	if rt := s.cfg.RequestTimeout; rt > 0 && (limit <= 0 || rt < limit) {
		limit = rt
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, limit, services.ErrTimeout)
	}
	defer cancel()

	tu := s.tuning
	r := &run{
		svc:      s,
		t:        t,
		id:       newRunID(req.CommandName),
		name:     req.CommandName,
		script:   script,
		stdout:   capture.New(tu.headBytes, tu.tailBytes),
		stderr:   capture.New(tu.headBytes, tu.tailBytes),
		liveOut:  &lineWriter{w: req.Live},
		liveErr:  &lineWriter{w: req.Live},
		activity: services.ActivityFrom(ctx),
	}
	if r.name == "" {
		r.name = "command"
	}
	envNames, _ := shellenv.Names(req.Env) // checked by buildScript
	slog.Debug("ssh: running a script", "host", t.addr(), "user", t.user, "command", r.name,
		"run", r.id, "lines", len(req.Script), "env", envNames, "timeout", limit)

	start := time.Now()
	exitCode, err := r.execute(runCtx)
	_ = r.liveOut.Flush()
	_ = r.liveErr.Flush()
	timedOut := err != nil && runCtx.Err() != nil && errors.Is(runCtx.Err(), context.DeadlineExceeded)
	switch {
	case err == nil:
	case timedOut:
		if limit > 0 && errors.Is(context.Cause(runCtx), services.ErrTimeout) {
			err = fmt.Errorf("%s on %s ran past its time limit of %s and was killed: %w", r.name, t, limit, errors.Join(services.ErrTimeout, err))
		} else {
			err = fmt.Errorf("%s on %s ran past the deadline and was killed: %w", r.name, t, errors.Join(services.ErrTimeout, context.DeadlineExceeded, err))
		}
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		err = fmt.Errorf("%s on %s was cancelled and killed: %w", r.name, t, errors.Join(context.Canceled, err))
	default:
		err = fmt.Errorf("%s on %s: %w", r.name, t, err)
	}
	line := services.LineResult{
		Line:      strings.Join(req.Script, "\n"),
		ExitCode:  exitCode,
		Stdout:    r.stdout.String(),
		Stderr:    r.stderr.String(),
		Truncated: r.stdout.Truncated() || r.stderr.Truncated(),
		TimedOut:  timedOut,
		Duration:  time.Since(start),
	}
	return services.ExecResult{
		ExitCode: exitCode,
		Stdout:   line.Stdout,
		Stderr:   line.Stderr,
		Lines:    []services.LineResult{line},
	}, err
}

// newRunID names a run directory: time, command name and randomness.
func newRunID(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	if clean == "" || clean[0] == '.' {
		clean = "cmd" + clean
	}
	return time.Now().UTC().Format("20060102T150405") + "-" + clean + "-" + hex.EncodeToString(b[:])
}

// Phases of a run, for deciding what to do when it fails.
const (
	phasePrepare = iota
	phaseStart
	phaseFollow
)

// errNotStarted is wrapped when the wrapper never claimed the run.
var errNotStarted = errors.New("the script did not start")

// errVanished is wrapped when the script's processes are gone without an
// exit code.
var errVanished = errors.New("the script's processes ended without writing an exit code (they were killed, or the host restarted)")

// aliveFn is shell code defining alive(): whether a process of session $p
// other than a zombie is left (kill -0 where ps cannot tell).
const aliveFn = `alive() { if s=$(ps -o stat= -s "$p" 2>/dev/null); then printf '%s\n' "$s" | grep -q '^[^Z]'; else kill -s 0 -- "-$p" 2>/dev/null; fi; }`

// alive reports whether the run's process group still has a live process.
// The exit file is written before the wrapper ends, so a run found dead
// with no exit file after this check has lost its processes.
func (r *run) alive(ctx context.Context, c *conn) (bool, error) {
	cmd := strings.Join([]string{
		"d=" + shellenv.Quote(r.dir),
		`[ -e "$d/exit" ] && { echo alive; exit 0; }`,
		`p=$(cat "$d/pgid" 2>/dev/null)`,
		`case "$p" in ''|*[!0-9]*) echo alive; exit 0;; esac`, // started, pgid not yet written
		aliveFn,
		`if alive; then echo alive; else echo gone; fi`,
	}, "\n")
	res, err := c.run(ctx, cmd, nil)
	if err != nil {
		return false, err
	}
	switch strings.TrimSpace(res.stdout) {
	case "alive":
		return true, nil
	case "gone":
		return false, nil
	}
	return false, fmt.Errorf("checking the script's processes: exit code %d: %s", res.exitCode, strings.TrimSpace(res.stderr))
}

// execute writes, starts and follows the run; on timeout or cancellation it
// kills the remote process group. It returns the script's exit code, or -1
// when there is none.
func (r *run) execute(ctx context.Context) (int, error) {
	if err := r.do(ctx, "preparing the run", r.prepare); err != nil {
		return -1, r.abort(ctx, err, phasePrepare)
	}
	r.startedAt = time.Now()
	if err := r.do(ctx, "starting the script", r.start); err != nil {
		return -1, r.abort(ctx, err, phaseStart)
	}
	tu := r.svc.tuning
	interval := tu.pollMin
	lastCheck := time.Now()
	gone := false
	for {
		code, done, got, err := r.poll(ctx)
		if err != nil {
			return -1, r.abort(ctx, err, phaseFollow)
		}
		if done {
			r.cleanup(ctx)
			return code, nil
		}
		if gone {
			// The processes had ended before this poll, and still no exit
			// code: the wrapper was killed, or the host restarted.
			return -1, r.abort(ctx, fmt.Errorf("%w; its files are in %s", errVanished, r.dir), phaseFollow)
		}
		if r.sawStart && time.Since(lastCheck) >= tu.livenessEvery {
			lastCheck = time.Now()
			var alive bool
			err := r.do(ctx, "checking that the script runs", func(ctx context.Context, c *conn) error {
				var err error
				alive, err = r.alive(ctx, c)
				return err
			})
			if err != nil {
				return -1, r.abort(ctx, err, phaseFollow)
			}
			if !alive {
				gone = true
				continue // one more poll: the exit code may have just been written
			}
		}
		if got {
			interval = max(tu.pollMin, interval/2)
		} else {
			interval = min(tu.pollMax, 2*interval)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return -1, r.abort(ctx, context.Cause(ctx), phaseFollow)
		}
	}
}

// abort ends a run that failed or was stopped. When the context ended, or
// the script never started, it makes sure nothing runs (kill claims the run
// or kills its process group), collects the last output and removes the
// run directory. When bench lost track of a script that may still be
// running, the directory is kept and logged.
func (r *run) abort(ctx context.Context, cause error, phase int) error {
	if r.dir == "" {
		return cause
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.svc.tuning.cleanupTimeout)
	defer cancel()
	stopped := ctx.Err() != nil
	switch {
	case phase == phasePrepare:
		r.cleanup(actx)
		return cause
	case phase == phaseFollow && !stopped && !errors.Is(cause, errNotStarted):
		slog.Warn("ssh: lost track of a remote script; its files are kept on the host",
			"host", r.t.addr(), "run_dir", r.dir, "err", cause)
		return cause
	}
	if err := r.do(actx, "killing the script", r.kill); err != nil {
		slog.Warn("ssh: could not kill a remote script; it may still run", "host", r.t.addr(), "run_dir", r.dir, "err", err)
		return errors.Join(cause, fmt.Errorf("killing the remote process group: %w", err))
	}
	if stopped {
		if _, _, _, err := r.poll(actx); err != nil {
			slog.Debug("ssh: reading the output after a kill failed", "err", err)
		}
	}
	r.cleanup(actx)
	return cause
}

// do runs op on a live connection, reconnecting and retrying while the
// connection breaks. Retries stop when the context ends or after the
// reconnect window; a first connection that fails is not retried (the host
// is unreachable or misconfigured, and nothing runs yet).
func (r *run) do(ctx context.Context, what string, op func(context.Context, *conn) error) error {
	tu := r.svc.tuning
	var firstFail time.Time
	backoff := 100 * time.Millisecond
	for {
		c, err := r.svc.pool.get(ctx, r.t)
		if err == nil {
			r.connected = true
			err = r.withOpTimeout(ctx, c, op)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil || !isTransportErr(c, err) {
				return fmt.Errorf("%s: %w", what, err)
			}
			r.svc.pool.drop(c)
		} else if ctx.Err() != nil || !isTransportErr(nil, err) || !r.connected {
			return err
		}
		if firstFail.IsZero() {
			firstFail = time.Now()
			slog.Warn("ssh: connection lost; reconnecting", "host", r.t.addr(), "while", what, "err", err)
		} else if time.Since(firstFail) > tu.reconnectWindow {
			return fmt.Errorf("%s: no working connection to %s for %s: %w", what, r.t, tu.reconnectWindow, err)
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, 5*time.Second)
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		}
	}
}

var errOpTimeout = errors.New("the host did not answer in time")

// withOpTimeout runs op with a bound; SFTP calls take no context, so a
// hung operation is ended by closing its connection.
func (r *run) withOpTimeout(ctx context.Context, c *conn, op func(context.Context, *conn) error) error {
	return withOpTimeout(ctx, c, r.svc.tuning.opTimeout, op)
}

// withOpTimeout runs op on c, closing c when op takes longer than d.
func withOpTimeout(ctx context.Context, c *conn, d time.Duration, op func(context.Context, *conn) error) error {
	octx, cancel := context.WithTimeoutCause(ctx, d, errOpTimeout)
	defer cancel()
	stop := context.AfterFunc(octx, func() {
		if errors.Is(context.Cause(octx), errOpTimeout) {
			c.close()
		}
	})
	defer stop()
	err := op(octx, c)
	if err != nil && errors.Is(context.Cause(octx), errOpTimeout) && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", errOpTimeout, io.ErrUnexpectedEOF)
	}
	return err
}

// prepare creates the run directory (0700) and writes the script and the
// wrapper that runs it. A retry after a broken connection rewrites them,
// unless the run has already started.
func (r *run) prepare(_ context.Context, c *conn) error {
	sc, home, err := c.sftpClient()
	if err != nil {
		return err
	}
	if r.dir == "" {
		r.dir = path.Join(home, runsDir, r.id)
	}
	if _, err := sc.Stat(path.Join(r.dir, "started")); err == nil {
		return nil
	}
	if err := sc.MkdirAll(path.Join(home, runsDir)); err != nil {
		return fmt.Errorf("creating %s on the host: %w", path.Join(home, runsDir), err)
	}
	if err := sc.Mkdir(r.dir); err != nil {
		if _, serr := sc.Stat(r.dir); serr != nil {
			return fmt.Errorf("creating the run directory %s: %w", r.dir, err)
		}
	}
	if err := sc.Chmod(r.dir, 0o700); err != nil {
		return fmt.Errorf("restricting the run directory %s: %w", r.dir, err)
	}
	if err := writeRemote(sc, path.Join(r.dir, "script.sh"), r.script); err != nil {
		return err
	}
	return writeRemote(sc, path.Join(r.dir, "wrapper.sh"), r.wrapper())
}

func writeRemote(sc *sftp.Client, p, content string) error {
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("writing %s on the host: %w", p, err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s on the host: %w", p, err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s on the host: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s on the host: %w", p, err)
	}
	return nil
}

// wrapper is the detached process: it claims the run (mkdir is atomic, so
// a second launch exits at once), records its process group, runs the
// script with its output in files and writes the exit code atomically.
func (r *run) wrapper() string {
	d := shellenv.Quote(r.dir)
	return strings.Join([]string{
		"d=" + d,
		`mkdir "$d/started" 2>/dev/null || exit 0`,
		`echo $$ >"$d/pgid.tmp" && mv -f "$d/pgid.tmp" "$d/pgid"`,
		shellenv.Quote(r.svc.cfg.Shell) + ` "$d/script.sh" </dev/null >"$d/stdout" 2>"$d/stderr"`,
		`echo $? >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"`,
		"",
	}, "\n")
}

// start launches the wrapper in a new session (setsid), detached from the
// SSH connection. Launching twice is harmless: the wrapper claims the run.
func (r *run) start(ctx context.Context, c *conn) error {
	cmd := strings.Join([]string{
		"d=" + shellenv.Quote(r.dir),
		`[ -d "$d/started" ] && exit 0`,
		`command -v setsid >/dev/null 2>&1 || { echo 'setsid is not installed on the host (it comes with util-linux)' >&2; exit 127; }`,
		`setsid /bin/sh "$d/wrapper.sh" </dev/null >>"$d/launch.log" 2>&1 &`,
		"exit 0",
	}, "\n")
	res, err := c.run(ctx, cmd, nil)
	if err != nil {
		return err
	}
	if res.exitCode != 0 {
		return fmt.Errorf("starting the script failed (exit code %d): %s", res.exitCode, strings.TrimSpace(res.stderr))
	}
	return nil
}

// poll reads the output written since the last poll and whether the script
// has ended. The exit file is checked before the output is read: once it
// exists the script has finished writing, so the output read after it is
// complete.
func (r *run) poll(ctx context.Context) (code int, done, got bool, err error) {
	err = r.do(ctx, "following the script", func(_ context.Context, c *conn) error {
		sc, _, err := c.sftpClient()
		if err != nil {
			return err
		}
		exitData, err := readSmall(sc, path.Join(r.dir, "exit"))
		if err != nil {
			return err
		}
		n1, err := r.readNew(sc, "stdout", &r.offOut, r.stdout, r.liveOut)
		if err != nil {
			return err
		}
		n2, err := r.readNew(sc, "stderr", &r.offErr, r.stderr, r.liveErr)
		if err != nil {
			return err
		}
		got = n1+n2 > 0
		if got {
			r.activity.Touch()
		}
		if exitData != nil {
			v, perr := strconv.Atoi(strings.TrimSpace(string(exitData)))
			if perr != nil {
				return fmt.Errorf("the exit code file of %s holds %q", r.dir, exitData)
			}
			code, done = v, true
			return nil
		}
		if !r.sawStart {
			if _, err := sc.Stat(path.Join(r.dir, "started")); err == nil {
				r.sawStart = true
			} else if time.Since(r.startedAt) > r.svc.tuning.startGrace {
				launch, _ := readSmall(sc, path.Join(r.dir, "launch.log"))
				return fmt.Errorf("%w within %s: %s", errNotStarted, r.svc.tuning.startGrace, strings.TrimSpace(string(launch)))
			}
		}
		return nil
	})
	return code, done, got, err
}

// readSmall returns a small file's content, or nil when it does not exist.
func readSmall(sc *sftp.Client, p string) ([]byte, error) {
	f, err := sc.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// maxReadPerPoll bounds one poll's reading so that a very chatty script
// does not keep the loop from noticing that it has ended.
const maxReadPerPoll = 16 << 20

// readNew reads the bytes of an output file past *off and hands them on.
func (r *run) readNew(sc *sftp.Client, name string, off *int64, keep *capture.Buffer, live *lineWriter) (int64, error) {
	f, err := sc.Open(path.Join(r.dir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	var total int64
	for total < maxReadPerPoll {
		n, err := f.ReadAt(buf, *off)
		if n > 0 {
			_, _ = keep.Write(buf[:n])
			if lerr := func() error { _, e := live.Write(buf[:n]); return e }(); lerr != nil {
				slog.Debug("ssh: writing live output failed", "err", lerr)
			}
			*off += int64(n)
			total += int64(n)
		}
		if err == io.EOF || (err == nil && n < len(buf)) {
			break
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// kill stops the run: it claims the run first if the wrapper has not (so
// it never starts), else it sends SIGTERM to the process group and the
// session the wrapper leads, then SIGKILL to what is left after a grace
// period. Zombies waiting to be reaped do not count as left.
func (r *run) kill(ctx context.Context, c *conn) error {
	cmd := strings.Join([]string{
		"d=" + shellenv.Quote(r.dir),
		`mkdir "$d/started" 2>/dev/null && exit 0`,
		`i=0; while [ ! -s "$d/pgid" ] && [ ! -e "$d/exit" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done`,
		`[ -e "$d/exit" ] && exit 0`,
		`p=$(cat "$d/pgid" 2>/dev/null)`,
		`case "$p" in ''|*[!0-9]*) echo "no process group recorded in $d" >&2; exit 1;; esac`,
		aliveFn,
		`sig() { kill -s "$1" -- "-$p" 2>/dev/null; if command -v pkill >/dev/null 2>&1; then pkill -"$1" -s "$p" 2>/dev/null; fi; }`,
		`sig TERM`,
		`i=0; while alive && [ $i -lt ` + strconv.Itoa(int(r.svc.tuning.killGrace/(100*time.Millisecond))) + ` ]; do sleep 0.1; i=$((i+1)); done`,
		`alive && sig KILL`,
		"exit 0",
	}, "\n")
	res, err := c.run(ctx, cmd, nil)
	if err != nil {
		return err
	}
	if res.exitCode != 0 {
		return fmt.Errorf("exit code %d: %s", res.exitCode, strings.TrimSpace(res.stderr))
	}
	return nil
}

// cleanup removes the run directory (best effort).
func (r *run) cleanup(ctx context.Context) {
	err := r.do(ctx, "removing the run directory", func(_ context.Context, c *conn) error {
		sc, _, err := c.sftpClient()
		if err != nil {
			return err
		}
		if err := sc.RemoveAll(r.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		slog.Warn("ssh: could not remove a run directory", "host", r.t.addr(), "run_dir", r.dir, "err", err)
	}
}

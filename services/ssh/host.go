package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/pkg/sftp"

	"github.com/benchtune/bench/internal/shellenv"
	"github.com/benchtune/bench/services"
)

// Host is a HostService bound to one host: the building blocks of
// RemoteExec (files over SFTP, short commands and detached runs) for
// callers that follow a run across calls, or across bench processes, such
// as the SSH pool execution engine. It shares the service's connections
// and host key checks. Every operation runs on the cached connection and
// is retried once on a new connection when that one turns out to be
// broken (each is idempotent); a host that cannot be reached fails at
// once.
//
// A detached run lives in a run directory on the host: StartDetached
// writes the script and a wrapper there and starts the wrapper in its own
// session (setsid), so that it survives the SSH connection; the wrapper
// records its process group in pgid, the script's output in stdout and
// stderr, and its exit code in exit (written atomically, after the
// output). DetachedState reads where a run is, KillDetached stops it.
type Host struct {
	s *HostService
	t target
}

// Host returns the host that params name (ssh_hostname, and optionally
// ssh_port, ssh_username and ssh_priv_key_path, as for RemoteExec).
func (s *HostService) Host(params services.Params) (*Host, error) {
	t, err := s.cfg.resolveTarget(params)
	if err != nil {
		return nil, fmt.Errorf("SshHostService: %w", err)
	}
	return &Host{s: s, t: t}, nil
}

// String is user@host:port.
func (h *Host) String() string { return h.t.String() }

// CloseConnections closes the service's cached connections; the service
// stays usable and the next operation connects again. Runs in progress
// on the hosts go on.
func (s *HostService) CloseConnections() { s.pool.dropAll() }

// IsPermanent reports whether err is a connection failure that retrying
// cannot fix: a host key that does not verify, a refused login, a missing
// or unusable key file, a missing known_hosts file.
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}

// do runs op on a live connection, once more on a new connection when the
// cached one broke.
func (h *Host) do(ctx context.Context, what string, op func(context.Context, *conn) error) error {
	for attempt := 0; ; attempt++ {
		c, err := h.s.pool.get(ctx, h.t)
		if err != nil {
			return err
		}
		err = withOpTimeout(ctx, c, h.s.tuning.opTimeout, op)
		if err == nil {
			return nil
		}
		if attempt > 0 || ctx.Err() != nil || !isTransportErr(c, err) {
			return fmt.Errorf("%s on %s: %w", what, h.t, err)
		}
		h.s.pool.drop(c)
	}
}

// withSFTP is do with the connection's SFTP client and login directory.
func (h *Host) withSFTP(ctx context.Context, what string, op func(sc *sftp.Client, home string) error) error {
	return h.do(ctx, what, func(_ context.Context, c *conn) error {
		sc, home, err := c.sftpClient()
		if err != nil {
			return err
		}
		return op(sc, home)
	})
}

// Home returns the login directory (relative paths start there).
func (h *Host) Home(ctx context.Context) (string, error) {
	var home string
	err := h.withSFTP(ctx, "finding the login directory", func(_ *sftp.Client, hd string) error {
		home = hd
		return nil
	})
	return home, err
}

// WriteFile writes data to p (parent directories are created) with the
// given permission bits, through a temporary file renamed into place.
func (h *Host) WriteFile(ctx context.Context, p string, data []byte, perm os.FileMode) error {
	return h.withSFTP(ctx, "writing "+p, func(sc *sftp.Client, _ string) error {
		if err := sc.MkdirAll(path.Dir(p)); err != nil {
			return fmt.Errorf("creating %s: %w", path.Dir(p), err)
		}
		tmp := path.Join(path.Dir(p), "."+path.Base(p)+tmpSuffix())
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL)
		if err != nil {
			return err
		}
		err = f.Chmod(perm)
		if err == nil {
			_, err = f.Write(data)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = renameRemote(sc, tmp, p)
		}
		if err != nil {
			_ = sc.Remove(tmp)
		}
		return err
	})
}

// UploadFile copies the local file src to dst (parent directories are
// created), keeping its permission bits; dst is never seen half written.
func (h *Host) UploadFile(ctx context.Context, src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return h.withSFTP(ctx, "uploading "+src+" to "+dst, func(sc *sftp.Client, _ string) error {
		if err := sc.MkdirAll(path.Dir(dst)); err != nil {
			return fmt.Errorf("creating %s: %w", path.Dir(dst), err)
		}
		return uploadFile(ctx, sc, src, info, dst)
	})
}

// Stat returns a remote file's information; a missing file gives an error
// wrapping fs.ErrNotExist.
func (h *Host) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	var info fs.FileInfo
	err := h.withSFTP(ctx, "reading the information of "+p, func(sc *sftp.Client, _ string) error {
		var err error
		info, err = sc.Stat(p)
		return err
	})
	return info, err
}

// ReadFile returns the first max bytes of a remote file; a missing file
// gives an error wrapping fs.ErrNotExist.
func (h *Host) ReadFile(ctx context.Context, p string, max int64) ([]byte, error) {
	var data []byte
	err := h.withSFTP(ctx, "reading "+p, func(sc *sftp.Client, _ string) error {
		f, err := sc.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, max))
		return err
	})
	return data, err
}

// ReadTail returns the last n bytes of a remote file and its size; a
// missing file gives an error wrapping fs.ErrNotExist.
func (h *Host) ReadTail(ctx context.Context, p string, n int64) ([]byte, int64, error) {
	var (
		data []byte
		size int64
	)
	err := h.withSFTP(ctx, "reading "+p, func(sc *sftp.Client, _ string) error {
		f, err := sc.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		size = info.Size()
		off := max(0, size-n)
		data = make([]byte, size-off)
		m, err := f.ReadAt(data, off)
		data = data[:m]
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	})
	return data, size, err
}

// ReadDir lists a remote folder; a missing folder gives an error wrapping
// fs.ErrNotExist.
func (h *Host) ReadDir(ctx context.Context, p string) ([]fs.FileInfo, error) {
	var out []fs.FileInfo
	err := h.withSFTP(ctx, "listing "+p, func(sc *sftp.Client, _ string) error {
		var err error
		out, err = sc.ReadDir(p)
		return err
	})
	return out, err
}

// RemoveAll removes a remote file or folder (nothing there is not an
// error).
func (h *Host) RemoveAll(ctx context.Context, p string) error {
	return h.withSFTP(ctx, "removing "+p, func(sc *sftp.Client, _ string) error {
		if err := sc.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// CommandResult is what a short command printed and its exit code.
type CommandResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Command runs a short shell command on the host (not detached: it ends
// with the connection) and returns its output, at most 64 KiB per
// stream. A non-zero exit is not an error. The caller quotes what it
// splices into cmd.
func (h *Host) Command(ctx context.Context, cmd string) (CommandResult, error) {
	var res cmdResult
	err := h.do(ctx, "running a command", func(ctx context.Context, c *conn) error {
		var err error
		res, err = c.run(ctx, cmd, nil)
		return err
	})
	return CommandResult{Stdout: res.stdout, Stderr: res.stderr, ExitCode: res.exitCode}, err
}

// ErrRunDirInUse is returned by StartDetached when the run directory
// holds a run that has already started.
var ErrRunDirInUse = errors.New("the run directory holds a run that has already started")

// StartDetached starts script (shell text, run by the service's ssh_shell)
// detached from the connection, in run directory dir (absolute; created
// with mode 0700, its parents as needed). It returns once the wrapper is
// launched, not when the script runs: DetachedState tells. A start that
// fails part way is safe to repeat with the same dir (the wrapper claims
// the run once); a dir whose run has started gives ErrRunDirInUse.
func (h *Host) StartDetached(ctx context.Context, dir, script string) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("the run directory %q must be an absolute path", dir)
	}
	r := &run{svc: h.s, t: h.t, dir: dir, script: script}
	err := h.withSFTP(ctx, "preparing run directory "+dir, func(sc *sftp.Client, _ string) error {
		if _, err := sc.Stat(path.Join(dir, "started")); err == nil {
			return ErrRunDirInUse
		}
		if err := sc.MkdirAll(path.Dir(dir)); err != nil {
			return fmt.Errorf("creating %s: %w", path.Dir(dir), err)
		}
		if err := sc.Mkdir(dir); err != nil {
			if _, serr := sc.Stat(dir); serr != nil {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
		}
		if err := sc.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restricting %s: %w", dir, err)
		}
		if err := writeRemote(sc, path.Join(dir, "script.sh"), script); err != nil {
			return err
		}
		return writeRemote(sc, path.Join(dir, "wrapper.sh"), r.wrapper())
	})
	if err != nil {
		return err
	}
	return h.do(ctx, "starting the run in "+dir, r.start)
}

// DetachedState is where a detached run is.
type DetachedState struct {
	// Exists: the run directory exists.
	Exists bool
	// Started: the wrapper has claimed the run (it runs or has run).
	Started bool
	// Exited: the script ended and its exit code is ExitCode.
	Exited   bool
	ExitCode int
	// Alive: a process of the run's session is alive.
	Alive bool
	// OutputSize is the size of the script's stdout and stderr together.
	OutputSize int64
}

// Gone reports a run that started and whose processes all ended without
// an exit code (they were killed, or the host restarted).
func (s DetachedState) Gone() bool { return s.Started && !s.Exited && !s.Alive }

// DetachedState reads the state of the run in dir with one command.
func (h *Host) DetachedState(ctx context.Context, dir string) (DetachedState, error) {
	cmd := strings.Join([]string{
		"d=" + shellenv.Quote(dir),
		`sz() { n=$(wc -c <"$1" 2>/dev/null) || n=0; echo "${n:-0}"; }`,
		`out() { echo "$1 $(( $(sz "$d/stdout") + $(sz "$d/stderr") ))"; }`,
		`code() { c=$(cat "$d/exit" 2>/dev/null); case "$c" in ''|*[!0-9]*) c=-1;; esac; echo "exit:$c"; }`,
		`[ -d "$d" ] || { echo "missing 0"; exit 0; }`,
		`[ -e "$d/exit" ] && { out "$(code)"; exit 0; }`,
		`[ -d "$d/started" ] || { out queued; exit 0; }`,
		`p=$(cat "$d/pgid" 2>/dev/null)`,
		`case "$p" in ''|*[!0-9]*) out alive; exit 0;; esac`, // started, pgid not yet written
		aliveFn,
		`if alive; then out alive; elif [ -e "$d/exit" ]; then out "$(code)"; else out gone; fi`,
	}, "\n")
	res, err := h.Command(ctx, cmd)
	if err != nil {
		return DetachedState{}, err
	}
	f := strings.Fields(res.Stdout)
	if res.ExitCode != 0 || len(f) != 2 {
		return DetachedState{}, fmt.Errorf("reading the state of run %s on %s: exit code %d: %s %s", dir, h.t, res.ExitCode,
			strings.TrimSpace(res.Stdout), strings.TrimSpace(res.Stderr))
	}
	var st DetachedState
	st.OutputSize, _ = strconv.ParseInt(f[1], 10, 64)
	switch word := f[0]; {
	case word == "missing":
	case word == "queued":
		st.Exists = true
	case word == "alive":
		st.Exists, st.Started, st.Alive = true, true, true
	case word == "gone":
		st.Exists, st.Started = true, true
	case strings.HasPrefix(word, "exit:"):
		st.Exists, st.Started, st.Exited = true, true, true
		st.ExitCode, _ = strconv.Atoi(strings.TrimPrefix(word, "exit:"))
	default:
		return DetachedState{}, fmt.Errorf("reading the state of run %s on %s: unexpected answer %q", dir, h.t, res.Stdout)
	}
	return st, nil
}

// PeekDetached reads the state of the run in dir over SFTP only (no
// process is started on the host, so it is cheap to call often), without
// checking its processes: a run that started and has not exited is
// reported Alive. DetachedState checks them.
func (h *Host) PeekDetached(ctx context.Context, dir string) (DetachedState, error) {
	var st DetachedState
	err := h.withSFTP(ctx, "reading the state of run "+dir, func(sc *sftp.Client, _ string) error {
		st = DetachedState{}
		size := func(name string) (bool, error) {
			info, err := sc.Stat(path.Join(dir, name))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return false, nil
			case err != nil:
				return false, err
			}
			st.OutputSize += info.Size()
			return true, nil
		}
		// The exit file first: once it exists the output is complete.
		code, err := readSmall(sc, path.Join(dir, "exit"))
		if err != nil {
			return err
		}
		if _, err := size("stdout"); err != nil {
			return err
		}
		if _, err := size("stderr"); err != nil {
			return err
		}
		if code != nil {
			st.Exists, st.Started, st.Exited = true, true, true
			st.ExitCode = -1
			if v, err := strconv.Atoi(strings.TrimSpace(string(code))); err == nil {
				st.ExitCode = v
			}
			return nil
		}
		if _, err := sc.Stat(path.Join(dir, "started")); err == nil {
			st.Exists, st.Started, st.Alive = true, true, true
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if _, err := sc.Stat(dir); err == nil {
			st.Exists = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	return st, err
}

// KillDetached stops the run in dir: a run that has not started yet is
// claimed so that it never starts; a running one gets SIGTERM (its
// process group and session), then SIGKILL after a grace period. A run
// that has ended is left alone.
func (h *Host) KillDetached(ctx context.Context, dir string) error {
	r := &run{svc: h.s, t: h.t, dir: dir}
	return h.do(ctx, "stopping the run in "+dir, r.kill)
}

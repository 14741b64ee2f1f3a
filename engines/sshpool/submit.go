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
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/services/ssh"
)

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
	tried := e.prepareAll(ctx)
	if h, r, ok := e.adoptEarlier(ctx, base, job, tried); ok {
		e.mu.Lock()
		e.hold(h, job.Name, r.key())
		e.mu.Unlock()
		return json.Marshal(r)
	}
	var r ref
	adopted := false
	// The slot is held under a provisional key until the run directory
	// is known.
	h, err := e.place(ctx, base, job.Name, base, func(h *host) error { return e.submitOn(ctx, h, base, job, &r, &adopted) })
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
	if !adopted {
		slog.Debug("ssh pool: submitted", "job", base, "host", h.addr, "run", r.Run)
	}
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
// When h already holds a started run of the same job and attempt for the
// same trial (left by an earlier bench, on a host adoptEarlier could not
// look at), that run is the job: nothing is written or started and
// *adopted is set.
func (e *Engine) submitOn(ctx context.Context, h *host, base string, job engines.Job, r *ref, adopted *bool) error {
	if err := e.prepare(ctx, h); err != nil {
		return err
	}
	*r = e.refOn(h, base, job)
	h.prepMu.Lock()
	earlier := h.runs[base]
	h.prepMu.Unlock()
	if earlier {
		same, err := e.sameRunThere(ctx, h, *r, job.Request)
		if err != nil {
			return err
		}
		if same {
			slog.Info("ssh pool: the job already runs (or ran) on a host, for the same trial; re-attaching to it",
				"job", base, "host", h.addr, "run", r.Run)
			*adopted = true
			return nil
		}
	}
	if err := h.h.WriteFile(ctx, r.Request, job.Request, 0o600); err != nil {
		return err
	}
	// A stale outcome (an earlier life of the same job and attempt) must
	// not be taken for this run's.
	if err := h.h.RemoveAll(ctx, r.Outcome); err != nil {
		return err
	}
	if err := h.h.RemoveAll(ctx, engines.ProgressPath(r.Outcome)); err != nil {
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
// run of the same trial (engines.SameTrial: the driver's claim, runner,
// arguments and device slot may differ).
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
	return engines.SameTrial(old, request), nil
}

// start starts script detached in run; a run directory left by an
// earlier life of the same job and attempt is stopped and replaced. A
// start that fails after the launch may have happened is undone, so that
// the job never runs twice.
func (e *Engine) start(ctx context.Context, h *host, run, script string) error {
	script = e.envLines + script // the pool's "env" (env.go)
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
// so that Submit knows where an earlier bench left runs. A host that fails
// for a reason a retry may fix is tried once more after a short pause (a
// run missed there would be started again elsewhere); its failure counts
// once. It returns the hosts it tried, on its first call only.
func (e *Engine) prepareAll(ctx context.Context) map[*host]bool {
	var tried map[*host]bool
	e.prepOnce.Do(func() {
		tried = map[*host]bool{}
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
			tried[h] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := e.prepare(ctx, h)
				if err != nil && !ssh.IsPermanent(err) && ctx.Err() == nil {
					select {
					case <-time.After(prepRetryPause):
						err = e.prepare(ctx, h)
					case <-ctx.Done():
					}
				}
				e.noteResult(ctx, h, err)
				if err != nil {
					slog.Warn("ssh pool: cannot reach a host", "host", h.addr, "err", err)
				}
			}()
		}
		wg.Wait()
	})
	return tried
}

// prepRetryPause is how long prepareAll waits before trying a host again.
const prepRetryPause = 500 * time.Millisecond

// adoptEarlier looks for base's run left by an earlier bench on any
// usable host and, when it runs the same trial, takes it as the job.
// A usable host not prepared yet (prepareAll could not reach it, or it
// was set aside then), unless this very call's prepareAll just tried it,
// is prepared first (its runs are listed), so that a run there is not
// missed and started again elsewhere; one that still cannot be reached
// is left out, its failure counted (a host that is gone gets its jobs
// relaunched elsewhere).
func (e *Engine) adoptEarlier(ctx context.Context, base string, job engines.Job, tried map[*host]bool) (*host, ref, bool) {
	now := time.Now()
	for _, h := range e.hosts {
		e.mu.Lock()
		usable := h.usable(now)
		e.mu.Unlock()
		if !usable {
			continue
		}
		h.prepMu.Lock()
		prepped := h.prepped
		h.prepMu.Unlock()
		if !prepped && tried[h] {
			continue
		}
		if !prepped {
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := e.prepare(pctx, h)
			cancel()
			e.noteResult(ctx, h, err)
			if err != nil {
				slog.Warn("ssh pool: cannot reach a host to look for a run left there", "host", h.addr, "job", base, "err", err)
				continue
			}
		}
		h.prepMu.Lock()
		found := h.runs[base]
		h.prepMu.Unlock()
		if !found {
			continue
		}
		r := e.refOn(h, base, job)
		same, err := e.sameRunThere(ctx, h, r, job.Request)
		e.noteResult(ctx, h, err)
		if err == nil && same {
			slog.Info("ssh pool: the job already runs (or ran) on a host, for the same trial; re-attaching to it",
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

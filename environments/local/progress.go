package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/internal/safeio"
)

// defaultProgressPoll is how often progress_file is read while the run
// script runs (progress_poll_interval).
const defaultProgressPoll = time.Second

// runProgress reports a running run script's progress (bench's
// progress_pattern and progress_file) to the trial's listener
// (environments.ProgressFrom). A nil *runProgress does nothing.
type runProgress struct {
	e    *Env
	p    *script.Progress
	file *script.ProgressFile
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	fileErr error
}

// startProgress starts following the run's progress; nil when nobody
// listens or the environment reports none. progress_file is removed
// first, so that rows of an earlier trial are not read again.
func (e *Env) startProgress(ctx context.Context, dir string) *runProgress {
	fn := environments.ProgressFrom(ctx)
	if fn == nil || (e.script.ProgressPattern == nil && e.progressFile == "") {
		return nil
	}
	r := &runProgress{e: e, p: script.NewProgress(fn, e.script.ProgressPattern)}
	if e.progressFile == "" {
		return r
	}
	path := e.progressFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// A previous trial's rows are not this one's.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.log.Warn("cannot remove the previous progress file", "file", path, "err", err)
	}
	max := e.dataLimit("progress file").Bytes
	if max <= 0 {
		max = safeio.DefaultDataLimit
	}
	r.file = script.NewProgressFile(r.p, path, max)
	r.quit, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		tick := time.NewTicker(e.progressPoll)
		defer tick.Stop()
		for {
			select {
			case <-r.quit:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				r.poll(false)
			}
		}
	}()
	return r
}

func (r *runProgress) poll(final bool) {
	if err := r.file.Poll(final); err != nil {
		r.mu.Lock()
		if r.fileErr == nil {
			r.fileErr = err
			r.e.log.Warn("cannot read the progress file", "err", err)
		}
		r.mu.Unlock()
	}
}

// live is the writer the run's output lines go to (nil: none).
func (r *runProgress) live() io.Writer {
	if r == nil || r.e.script.ProgressPattern == nil {
		return nil
	}
	return r.p
}

// stop reads the progress file a last time (the rows the script wrote
// last) and returns notes on progress that could not be read.
func (r *runProgress) stop() []string {
	if r == nil {
		return nil
	}
	if r.file != nil {
		close(r.quit)
		<-r.done
		r.poll(true)
	}
	var notes []string
	if n, err := r.p.Err(); n > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d progress report(s) could not be read and were skipped; the first: %v", r.e.who(), n, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fileErr != nil {
		notes = append(notes, fmt.Sprintf("%s: %v", r.e.who(), r.fileErr))
	}
	return notes
}

package engines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/trial"
)

// A running trial's progress travels back from the far side in a file
// beside its outcome file (ProgressPath): `bench exec-trial` appends one
// JSON line per report (trial.Progress), and the driver's Runner reads
// what was appended at each poll of the job (engines that implement
// ProgressReader) and hands it to Spec.Progress.

// ProgressPath is the progress file beside an outcome file: X.outcome.json
// gives X.progress.jsonl. Outcomes that are not local paths (s3://...)
// have none ("").
func ProgressPath(outcome string) string {
	if outcome == "" || strings.Contains(outcome, "://") || strings.HasPrefix(outcome, "env:") {
		return ""
	}
	return strings.TrimSuffix(outcome, ".outcome.json") + ".progress.jsonl"
}

// ProgressReader is implemented by engines that can read a job's progress
// file while it runs (local, Slurm through the shared folder, the SSH
// pool over SSH), or, for Kubernetes, the progress lines of its log
// (progress_log.go).
type ProgressReader interface {
	// ReadProgress returns the bytes of the job's progress file from
	// offset on (at most about MaxProgressRead); none (nil, nil) when the
	// file does not exist (yet).
	ReadProgress(ctx context.Context, ref Ref, offset int64) ([]byte, error)
}

// MaxProgressRead bounds one ReadProgress; the rest comes at the next.
const MaxProgressRead = 1 << 20

// ReadFileFrom reads a local file from offset, at most MaxProgressRead
// bytes (ProgressReader for engines whose job files are local).
func ReadFileFrom(path string, offset int64) ([]byte, error) {
	f, _, err := safeio.Open(path, "progress file")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, offset, MaxProgressRead), MaxProgressRead))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ProgressWriter appends a trial's reports to its progress file (the far
// side's Spec.Progress). Safe for concurrent use; a write error is logged
// once and later reports are dropped.
type ProgressWriter struct {
	mu     sync.Mutex
	f      *os.File
	failed bool
}

// NewProgressWriter creates (truncates) the progress file at path.
func NewProgressWriter(path string) (*ProgressWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &ProgressWriter{f: f}, nil
}

// Add appends one report as a JSON line (a zero Ts becomes now).
func (w *ProgressWriter) Add(p trial.Progress) {
	if p.Ts.IsZero() {
		p.Ts = time.Now().UTC()
	}
	b, err := json.Marshal(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed || w.f == nil {
		return
	}
	if err == nil {
		_, err = w.f.Write(append(b, '\n'))
	}
	if err != nil {
		w.failed = true
		slog.Warn("bench exec-trial: cannot write the trial's progress; later reports are dropped", "err", err)
	}
}

// Close closes the file.
func (w *ProgressWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// progressFollower reads a job's progress file for Runner.wait.
// ProgressPacer is a ProgressReader whose reads cost something (an API
// request): the driver reads a running job's progress at most every
// ProgressEvery (0: at each poll), and once more when the job ends.
type ProgressPacer interface {
	ProgressEvery() time.Duration
}

type progressFollower struct {
	every   time.Duration // ProgressPacer's pace (0: every poll)
	last    time.Time     // the last read
	eng     ProgressReader
	ref     Ref
	fn      func(trial.Progress)
	log     *slog.Logger
	off     int64
	partial []byte
	warned  bool
}

func newProgressFollower(eng Engine, ref Ref, fn func(trial.Progress), log *slog.Logger) *progressFollower {
	pr, ok := eng.(ProgressReader)
	if !ok || fn == nil {
		return nil
	}
	f := &progressFollower{eng: pr, ref: ref, fn: fn, log: log}
	if p, ok := eng.(ProgressPacer); ok {
		f.every = p.ProgressEvery()
	}
	return f
}

// read hands the reports appended since the last read to fn; final: the
// job ended (read to the end, a last line without newline included).
func (f *progressFollower) read(ctx context.Context, final bool) {
	if f == nil {
		return
	}
	now := time.Now()
	if !final && f.every > 0 && !f.last.IsZero() && now.Sub(f.last) < f.every {
		return
	}
	f.last = now
	for {
		b, err := f.eng.ReadProgress(ctx, f.ref, f.off)
		if err != nil {
			if !f.warned && ctx.Err() == nil {
				f.warned = true
				f.log.Warn("cannot read the job's progress file; trying again at the next poll", "err", err)
			}
			return
		}
		f.off += int64(len(b))
		data := append(f.partial, b...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			f.line(data[:i])
			data = data[i+1:]
		}
		f.partial = append([]byte(nil), data...)
		if !final || len(b) < MaxProgressRead {
			break
		}
	}
	if final && len(bytes.TrimSpace(f.partial)) > 0 {
		f.line(f.partial)
		f.partial = nil
	}
}

func (f *progressFollower) line(b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var p trial.Progress
	if err := json.Unmarshal(b, &p); err != nil {
		if !f.warned {
			f.warned = true
			f.log.Warn("skipped a line of the job's progress file", "err", fmt.Errorf("not a progress report: %w", err))
		}
		return
	}
	if len(p.Values) > 0 {
		f.fn(p)
	}
}

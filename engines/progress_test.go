package engines

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/trial"
)

// fileProgress reads a local file as a job's progress file.
type fileProgress struct {
	Engine
	path string
}

func (f fileProgress) ReadProgress(_ context.Context, _ Ref, off int64) ([]byte, error) {
	return ReadFileFrom(f.path, off)
}

// The follower hands over complete lines as they are appended, skips
// what is not a report, and reads a last line without newline at the end.
func TestProgressFollower(t *testing.T) {
	dir := t.TempDir()
	outcome := filepath.Join(dir, "job.0.outcome.json")
	path := ProgressPath(outcome)
	if path != filepath.Join(dir, "job.0.progress.jsonl") || ProgressPath("s3://b/k.outcome.json") != "" {
		t.Fatalf("ProgressPath: %q", path)
	}
	var got []int64
	f := newProgressFollower(fileProgress{path: path}, nil, func(p trial.Progress) { got = append(got, p.Step) }, slog.Default())
	f.read(context.Background(), false) // no file yet
	w, err := NewProgressWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(trial.Progress{Step: 0, Values: map[string]any{"loss": 1.0}})
	w.Add(trial.Progress{Step: 1, Values: map[string]any{}}) // no values: skipped by the reader
	f.read(context.Background(), false)
	appendString(t, path, "not json\n{\"step\": 2, \"values\": {\"loss\": 0.5}}\n{\"step\": 3, \"val")
	f.read(context.Background(), false)
	if diff := cmp.Diff([]int64{0, 2}, got); diff != "" {
		t.Errorf("steps before the end (-want +got):\n%s", diff)
	}
	appendString(t, path, "ues\": {\"loss\": 0.25}}")
	f.read(context.Background(), true)
	if diff := cmp.Diff([]int64{0, 2, 3}, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Add(trial.Progress{Step: 9, Values: map[string]any{"x": 1}}) // after Close: dropped, no panic
}

func appendString(t *testing.T, p, s string) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// countingProgress counts its reads and paces them (ProgressPacer).
type countingProgress struct {
	Engine
	reads *int
	every time.Duration
}

func (c countingProgress) ReadProgress(context.Context, Ref, int64) ([]byte, error) {
	*c.reads++
	return nil, nil
}

func (c countingProgress) ProgressEvery() time.Duration { return c.every }

// A paced reader (an API request per read) is read at most every
// ProgressEvery while the job runs, and always once when it ends.
func TestProgressFollowerPaced(t *testing.T) {
	n := 0
	f := newProgressFollower(countingProgress{reads: &n, every: time.Hour}, nil, func(trial.Progress) {}, slog.Default())
	for i := 0; i < 5; i++ {
		f.read(context.Background(), false)
	}
	if n != 1 {
		t.Errorf("%d reads within the pace, want 1", n)
	}
	f.read(context.Background(), true)
	if n != 2 {
		t.Errorf("%d reads after the end, want 2 (the end is always read)", n)
	}
	n = 0
	f = newProgressFollower(countingProgress{reads: &n}, nil, func(trial.Progress) {}, slog.Default())
	for i := 0; i < 3; i++ {
		f.read(context.Background(), false)
	}
	if n != 3 {
		t.Errorf("unpaced: %d reads, want 3", n)
	}
}

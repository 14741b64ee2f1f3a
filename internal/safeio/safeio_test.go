package safeio

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifo-link")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "named pipe"},
		{fifoLink, "named pipe"},
		{zero, "character device"},
		{"/dev/null", "character device"},
		{dir, "folder"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(context.Background(), tc.path, Limit{What: "results file"}, DefaultDataLimit)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("%s: want a %s error naming the file, got %v", tc.path, tc.kind, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", tc.path)
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(p, make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(context.Background(), p, Limit{Bytes: 2048, What: "results file", Hint: "raise it with the global max_results_file_size"}, DefaultDataLimit)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want a TooLargeError, got %v", err)
	}
	for _, want := range []string{p, "2 KiB", "max_results_file_size", "2.9 KiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	data, err := ReadFile(context.Background(), p, Limit{Bytes: 3000}, DefaultDataLimit)
	if err != nil || len(data) != 3000 {
		t.Fatalf("at the limit: %d bytes, %v", len(data), err)
	}
	// A symlink to a regular file is read.
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(context.Background(), link, Limit{}, DefaultDataLimit); err != nil || len(data) != 3000 {
		t.Fatalf("through a symlink: %d bytes, %v", len(data), err)
	}
	// A file that reports no size (procfs) is still bounded.
	if _, err := ReadFile(context.Background(), "/proc/self/maps", Limit{Bytes: 16}, DefaultDataLimit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/proc/self/maps over 16 bytes: %v", err)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "none"), Limit{}, DefaultDataLimit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, Limit{}, DefaultDataLimit); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[any]int64{
		float64(1024): 1024, "64MiB": 64 << 20, "512 KiB": 512 << 10, "1GB": 1e9, "2G": 2 << 30, "100": 100, "1.5MiB": 3 << 19,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%v) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []any{"", "0", float64(-1), "12 parsecs", 1.5, "MiB", true, "1e30"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%v): want an error", in)
		}
	}
}

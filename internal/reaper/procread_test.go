package reaper

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readSmall reads what os.ReadFile reads, /proc files of any length
// included, and fails the same way for a file that is gone.
func TestReadSmallMatchesReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4095, 4096, 4097, 20000} {
		p := filepath.Join(dir, strconv.Itoa(n))
		want := bytes.Repeat([]byte("a=b\x00"), n/4+1)[:n]
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readSmall(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d bytes: read %d bytes, %v", n, len(got), err)
		}
	}
	self := "/proc/" + strconv.Itoa(os.Getpid())
	for _, name := range []string{"stat", "environ", "cmdline"} {
		want, werr := os.ReadFile(self + "/" + name)
		got, err := readSmall(self + "/" + name)
		if werr != nil {
			t.Skipf("no /proc: %v", werr)
		}
		if err != nil || len(got) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
		if name != "stat" && !bytes.Equal(got, want) { // stat's counters move
			t.Errorf("%s differs from os.ReadFile's", name)
		}
	}
	_, err := readSmall(filepath.Join(dir, "missing"))
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !gone(err) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing file: %v", err)
	}
}

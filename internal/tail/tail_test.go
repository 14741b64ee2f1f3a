package tail

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	r := &Reader{Path: p, What: "progress file", Max: 64}
	step := func(final bool, want ...string) {
		t.Helper()
		got, err := r.Lines(final)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
	}
	step(false) // missing: nothing
	appendTo(t, p, "a\nb")
	step(false, "a")
	appendTo(t, p, "c\r\nd\n")
	step(false, "bc", "d")
	step(false)
	appendTo(t, p, "e")
	step(true, "e")
	step(true)
	// Rewritten shorter: read again from the start.
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(false, "x")
	appendTo(t, p, string(make([]byte, 100)))
	if _, err := r.Lines(false); err == nil {
		t.Error("no error for a file past Max")
	}
	if _, err := (&Reader{Path: t.TempDir()}).Lines(false); err == nil {
		t.Error("no error for a directory")
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

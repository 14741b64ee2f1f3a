package safefs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteStaysInside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Links a trial could plant in the destination.
	for name, target := range map[string]string{
		"out":      outside,      // a folder outside
		"up":       "..",         // a relative climb
		"file":     victim,       // a file outside
		"in":       ".",          // the root itself: allowed
		"deep/out": "../../../x", // dangling, outside
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for _, rel := range []string{"out/new", "out/victim", "up/x", "deep/out/y", "../x", "/abs"} {
		if err := d.WriteBytes(ctx, rel, []byte("evil"), 0o644); !errors.Is(err, ErrOutside) {
			t.Errorf("write %s: err = %v, want ErrOutside", rel, err)
		}
		if err := d.MkdirAll(filepath.Join(rel, "sub")); !errors.Is(err, ErrOutside) {
			t.Errorf("mkdir %s/sub: err = %v, want ErrOutside", rel, err)
		}
	}
	// A link at the file's own name is replaced, not followed.
	if err := d.WriteBytes(ctx, "file", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "file")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("file: %v %v, want a regular file with mode 0600", fi, err)
	}
	// Links that stay inside work.
	if err := d.WriteBytes(ctx, "in/a/b.txt", []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "a", "b.txt")); err != nil || string(got) != "ok" {
		t.Errorf("a/b.txt = %q, %v", got, err)
	}
	// Nothing changed outside.
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("outside holds %d entries, want only the victim", len(entries))
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("victim = %q, want it untouched", got)
	}
	// No temporary files were left behind.
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && filepath.Ext(e.Name()) != "" && len(e.Name()) > 10 && e.Name()[0] == '.' {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func TestWriteFileAtReplacesLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "v")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "params.json")
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAt(context.Background(), p, 0o644, time.Time{}, func(f *os.File) error {
		_, err := f.WriteString("{}")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target was written: %q", got)
	}
	if got, _ := os.ReadFile(p); string(got) != "{}" {
		t.Errorf("params.json = %q", got)
	}
}

func TestWriteCancelled(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.WriteBytes(ctx, "x", nil, 0o644); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

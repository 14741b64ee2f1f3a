package local

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/reaper"
)

func TestTempDirFresh(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	svc, err := NewTempDirContext(TempDirConfig{}, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, cleanA, err := svc.TempDir(ctx, "my env/with:odd*chars")
	if err != nil {
		t.Fatal(err)
	}
	b, cleanB, err := svc.TempDir(ctx, "my env/with:odd*chars")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two calls gave the same dir %s", a)
	}
	for _, d := range []string{a, b} {
		if filepath.Dir(d) != os.Getenv("TMPDIR") {
			t.Errorf("%s is not under TMPDIR", d)
		}
		if base := filepath.Base(d); !strings.HasPrefix(base, "bench-my_env_with_odd_chars-") {
			t.Errorf("dir name %q does not carry the sanitized env name", base)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := cleanA(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s not removed: %v", a, err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Errorf("cleaning one dir touched the other: %v", err)
	}
	if err := cleanB(); err != nil {
		t.Fatal(err)
	}
}

// TestTempDirReuse: a directory left empty is handed out again (saving a
// mkdir and a rmdir per trial); one written to is removed, and so is a
// spare that something wrote to after its release; Close removes spares.
func TestTempDirReuse(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	svc, err := NewTempDirContext(TempDirConfig{}, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func() (string, func() error) {
		t.Helper()
		d, clean, err := svc.TempDir(ctx, "env")
		if err != nil {
			t.Fatal(err)
		}
		if entries, err := os.ReadDir(d); err != nil || len(entries) != 0 {
			t.Fatalf("%s handed out with entries %v (err %v)", d, entries, err)
		}
		return d, clean
	}
	a, cleanA := get()
	if err := cleanA(); err != nil {
		t.Fatal(err)
	}
	if err := cleanA(); err != nil { // a second call changes nothing
		t.Fatal(err)
	}
	b, cleanB := get()
	if b != a {
		t.Errorf("an empty released dir was not reused: %s then %s", a, b)
	}
	// Written to: removed on release, and the next call gets a new one.
	if err := os.WriteFile(filepath.Join(b, "results.csv"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cleanB(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was written to and not removed: %v", b, err)
	}
	c, cleanC := get()
	if c == b {
		t.Errorf("a removed dir was handed out again")
	}
	// Written to after its release (a background process of its last
	// user): not handed out again.
	if err := cleanC(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c, "late"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, cleanD := get()
	if d == c {
		t.Errorf("a spare written to after its release was reused")
	}
	if _, err := os.Stat(c); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale spare %s not removed: %v", c, err)
	}
	if err := cleanD(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("Close left %v in TMPDIR", entries)
	}
}

func TestTempDirKeep(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	svc, err := NewTempDirContext(TempDirConfig{KeepTempDir: true}, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	d, cleanup, err := svc.TempDir(context.Background(), "env")
	if err != nil {
		t.Fatal(err)
	}
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("kept dir %s was removed: %v", d, err)
	}
}

func TestTempDirConfigured(t *testing.T) {
	base := t.TempDir()
	// A relative temp_dir found on the search path is used from there.
	if err := os.MkdirAll(filepath.Join(base, "cfg", "existing"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tempDir, want string
	}{
		{"absolute, created", filepath.Join(base, "a", "b"), filepath.Join(base, "a", "b")},
		{"relative on the search path", "existing", filepath.Join(base, "cfg", "existing")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := NewTempDirContext(TempDirConfig{TempDir: tc.tempDir}, Options{SearchPath: []string{filepath.Join(base, "cfg")}})
			if err != nil {
				t.Fatal(err)
			}
			d, cleanup, err := svc.TempDir(context.Background(), "env")
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Errorf("dir %s, want %s", d, tc.want)
			}
			if err := cleanup(); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("configured dir removed or missing: %v", err)
			}
		})
	}

	// A relative temp_dir that is not on the search path is relative to
	// the working folder.
	t.Chdir(base)
	svc, err := NewTempDirContext(TempDirConfig{TempDir: "rel/dir"}, Options{SearchPath: []string{filepath.Join(base, "cfg")}})
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := svc.TempDir(context.Background(), "env")
	if err != nil || d != filepath.Join(base, "rel", "dir") {
		t.Errorf("dir %s, %v", d, err)
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "env",
		"..":                    "env",
		"Local Env #1":          "Local_Env__1",
		"a/b\\c":                "a_b_c",
		"ok-name_1.2":           "ok-name_1.2",
		"héllo":                 "h_llo",
		strings.Repeat("x", 99): strings.Repeat("x", 48),
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTempDirCancelled(t *testing.T) {
	svc, err := NewTempDirContext(TempDirConfig{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := svc.TempDir(ctx, "env"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// BenchmarkTempDir compares what a trial paid for its working directory
// before (create and remove a directory) with reusing the one the last
// trial left empty (check that it is empty, twice).
func BenchmarkTempDir(b *testing.B) {
	b.Setenv("TMPDIR", b.TempDir())
	b.Run("create-remove", func(b *testing.B) {
		for b.Loop() {
			d, err := os.MkdirTemp("", "bench-env-")
			if err != nil {
				b.Fatal(err)
			}
			if err := os.RemoveAll(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reuse", func(b *testing.B) {
		svc, err := NewTempDirContext(TempDirConfig{}, Options{Logger: discardLogger()})
		if err != nil {
			b.Fatal(err)
		}
		defer svc.Close()
		for b.Loop() {
			_, cleanup, err := svc.TempDir(context.Background(), "env")
			if err != nil {
				b.Fatal(err)
			}
			if err := cleanup(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestRemoveStaleTempDirs(t *testing.T) {
	me, err := reaper.Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	root := t.TempDir()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := reaper.Owner{Boot: me.Boot, PID: c.Process.Pid, Start: 1}
	mk := func(name string) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("bench-my-env-" + dead.String() + "-123456")
	live := mk("bench-my-env-" + me.String() + "-123456")
	kept := mk("bench-my-env-123456")                // keep_temp_dir: no owner
	other := mk("benchmark-" + dead.String() + "-1") // not ours
	target := mk("elsewhere")
	link := filepath.Join(root, "bench-x-"+dead.String()+"-7")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	removed, err := removeStaleTempDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("removed %v, want only %s", removed, stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead bench's folder is still there: %v", err)
	}
	for _, p := range []string{live, kept, other, target, link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s must stay: %v", p, err)
		}
	}
	// A fresh temp dir carries this process's mark.
	td, err := newTempDirs(TempDirConfig{}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = td.Close() })
	dir, cleanup, err := td.TempDir(context.Background(), "e n v")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if m := staleName.FindStringSubmatch(filepath.Base(dir)); m == nil || m[1] != me.String() {
		t.Errorf("temp dir %s lacks the owner mark %s", dir, me)
	}
}

// A folder from MkdirOwnedTemp carries this bench's mark: the cleanup of
// a dead bench's folders (RemoveTempDirsOf, which its watchdog runs, and
// RemoveStaleTempDirs) finds it.
func TestMkdirOwnedTempIsRemovedWithItsOwner(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	me, err := reaper.Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	dir, err := MkdirOwnedTemp("checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	name, owner, ok := TempDirOwner(dir)
	if !ok || owner != me || name != "checkpoint" {
		t.Fatalf("TempDirOwner(%s) = %q, %v, %v; want checkpoint, %v", dir, name, owner, ok, me)
	}
	RemoveTempDirsOf(me.String())
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder is still there after RemoveTempDirsOf: %v", err)
	}
}

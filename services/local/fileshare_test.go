package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/sharetest"
)

func newShare(t *testing.T) (*LocalDirFileShareService, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "share")
	s, err := NewLocalDirFileShare(FileShareConfig{Root: root, CreateRoot: true}, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

// tree lists the files under dir as "path:mode:content".
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+":"+fi.Mode().Perm().String()+":"+string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestFileShareRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, root := newShare(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.txt"), "alpha", 0o644)
	writeFile(t, filepath.Join(src, "run.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(src, "sub/deep/b.txt"), "beta", 0o600)

	// A folder, recursively, into parents that do not exist yet.
	if err := s.Upload(ctx, nil, src, "exp1/trial1", true); err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt:-rw-r--r--:alpha", "run.sh:-rwxr-xr-x:#!/bin/sh\n", "sub/deep/b.txt:-rw-------:beta"}
	if diff := cmp.Diff(want, tree(t, filepath.Join(root, "exp1/trial1"))); diff != "" {
		t.Errorf("uploaded tree (-want +got):\n%s", diff)
	}

	// And back.
	dst := filepath.Join(t.TempDir(), "x", "y")
	if err := s.Download(ctx, nil, "exp1/trial1", dst, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, tree(t, dst)); diff != "" {
		t.Errorf("downloaded tree (-want +got):\n%s", diff)
	}

	// Not recursive: the top-level files only.
	flat := t.TempDir()
	if err := s.Download(ctx, nil, "exp1/trial1", flat, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:2], tree(t, flat)); diff != "" {
		t.Errorf("non-recursive download (-want +got):\n%s", diff)
	}
	if err := s.Upload(ctx, nil, src, "flat", false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:2], tree(t, filepath.Join(root, "flat"))); diff != "" {
		t.Errorf("non-recursive upload (-want +got):\n%s", diff)
	}

	// Single files; an upload replaces the file and its mode; absolute
	// remote paths inside the root are accepted.
	if err := s.Upload(ctx, nil, filepath.Join(src, "a.txt"), "one/file.txt", false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(src, "a.txt"), "alpha2", 0o640)
	if err := s.Upload(ctx, nil, filepath.Join(src, "a.txt"), filepath.Join(root, "one/file.txt"), true); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(t.TempDir(), "got.txt")
	if err := s.Download(ctx, nil, "one/./file.txt", got, true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(got); string(data) != "alpha2" {
		t.Errorf("downloaded %q", data)
	}
	if fi, _ := os.Stat(got); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}

	// No temporary files are left behind.
	for _, dir := range []string{root, filepath.Dir(got)} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if strings.Contains(d.Name(), ".bench-tmp-") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	}

	// A symbolic link inside the root that stays inside is followed.
	if err := os.Symlink("exp1/trial1", filepath.Join(root, "latest")); err != nil {
		t.Fatal(err)
	}
	viaLink := t.TempDir()
	if err := s.Download(ctx, nil, "latest/sub", viaLink, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deep/b.txt:-rw-------:beta"}, tree(t, viaLink)); diff != "" {
		t.Errorf("download through a link (-want +got):\n%s", diff)
	}
}

func TestFileShareMissing(t *testing.T) {
	ctx := context.Background()
	s, _ := newShare(t)
	err := s.Download(ctx, nil, "no/such/file", filepath.Join(t.TempDir(), "f"), true)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("download of a missing file: %v", err)
	}
	err = s.Upload(ctx, nil, filepath.Join(t.TempDir(), "missing"), "f", true)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("upload of a missing file: %v", err)
	}
}

func TestFileShareRefusesEscapes(t *testing.T) {
	ctx := context.Background()
	s, root := newShare(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "secret", 0o600)
	local := t.TempDir()
	writeFile(t, filepath.Join(local, "f"), "data", 0o644)
	writeFile(t, filepath.Join(local, "dir/g"), "data", 0o644)

	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "secretlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../nowhere/x", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(root, "in", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(root, "in", "upup")); err != nil {
		t.Fatal(err)
	}

	bad := []string{
		"..",
		"../x",
		"a/../../x",
		"/etc/passwd",
		outside + "/secret",
		"out/secret",
		"out/new",
		"out",
		"secretlink",
		"dangling",
		"dangling/deeper",
		"in/upup/x",
	}
	for _, remote := range bad {
		t.Run(remote, func(t *testing.T) {
			err := s.Download(ctx, nil, remote, filepath.Join(t.TempDir(), "got"), true)
			if !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("download %q: %v", remote, err)
			}
			for _, src := range []string{filepath.Join(local, "f"), local} {
				if err := s.Upload(ctx, nil, src, remote, true); !errors.Is(err, ErrOutsideRoot) {
					t.Errorf("upload %s to %q: %v", src, remote, err)
				}
			}
		})
	}
	// Nothing was written outside the root.
	if diff := cmp.Diff([]string{"secret:-rw-------:secret"}, tree(t, outside)); diff != "" {
		t.Errorf("outside the root (-want +got):\n%s", diff)
	}
	// A folder that holds a link to the outside is refused when the link
	// is reached.
	err := s.Download(ctx, nil, ".", t.TempDir(), true)
	if !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("download of a tree with an escaping link: %v", err)
	}

	// Inside-pointing "..": in/up is the root itself.
	if err := s.Upload(ctx, nil, filepath.Join(local, "f"), "in/up/ok.txt", true); err != nil {
		t.Errorf("upload through an inside link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ok.txt")); err != nil {
		t.Error(err)
	}
}

func TestFileShareRoot(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := NewLocalDirFileShare(FileShareConfig{Root: missing}, Options{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "create_root") {
		t.Errorf("missing root: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "", 0o644)
	if _, err := NewLocalDirFileShare(FileShareConfig{Root: file}, Options{}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file root: %v", err)
	}
	t.Chdir(t.TempDir())
	s, err := NewLocalDirFileShare(FileShareConfig{Root: "rel", CreateRoot: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if s.Root() != filepath.Join(wd, "rel") {
		t.Errorf("root %s", s.Root())
	}

	// Uploading a file onto the root itself is refused.
	f := filepath.Join(t.TempDir(), "f")
	writeFile(t, f, "x", 0o644)
	if err := s.Upload(context.Background(), nil, f, ".", true); err == nil {
		t.Error("upload of a file onto the root: no error")
	}
}

func TestFileShareCancelled(t *testing.T) {
	s, _ := newShare(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a"), "x", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Upload(ctx, nil, src, "d", true); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// A FIFO (or a device) where a file is expected is refused at once: a
// transfer never blocks in open or reads without end.
func TestFileShareRefusesFIFOs(t *testing.T) {
	s, root := newShare(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(local, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan [2]error, 1)
	go func() {
		ctx := context.Background()
		done <- [2]error{
			s.Download(ctx, nil, "pipe", filepath.Join(local, "out"), false),
			s.Upload(ctx, nil, filepath.Join(local, "pipe"), "up", false),
		}
	}()
	select {
	case errs := <-done:
		for i, err := range errs {
			if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("transfer %d: want a not-a-regular-file error, got %v", i, err)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a transfer of a FIFO blocked")
	}
}

// A folder download writes each entry through the destination's root: a
// symbolic link planted in the destination (by a trial's scripts, say)
// that points outside it is refused, and nothing is written outside.
func TestFileShareDownloadDestinationLink(t *testing.T) {
	ctx := context.Background()
	s, root := newShare(t)
	writeFile(t, filepath.Join(root, "res", "sub", "x.csv"), "a,b", 0o644)
	writeFile(t, filepath.Join(root, "res", "top.csv"), "c,d", 0o644)
	outside := t.TempDir()
	for _, planted := range []string{"sub", "top.csv"} {
		t.Run(planted, func(t *testing.T) {
			local := t.TempDir()
			target := outside
			if planted == "top.csv" {
				target = filepath.Join(outside, "top.csv")
			}
			if err := os.Symlink(target, filepath.Join(local, planted)); err != nil {
				t.Fatal(err)
			}
			err := s.Download(ctx, nil, "res", local, true)
			if planted == "sub" && !errors.Is(err, safefs.ErrOutside) {
				t.Errorf("download through a planted folder link: err = %v, want safefs.ErrOutside", err)
			}
			if planted == "top.csv" {
				// A link at a file's own name is replaced by the file.
				if fi, err := os.Lstat(filepath.Join(local, "top.csv")); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("top.csv: %v %v, want the downloaded regular file", fi, err)
				}
			}
			if got := tree(t, outside); len(got) != 0 {
				t.Errorf("written outside the destination: %v", got)
			}
		})
	}
	// The single-file download replaces a link at the destination too.
	local := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(local, "f.csv")); err != nil {
		t.Fatal(err)
	}
	if err := s.Download(ctx, nil, "res/top.csv", filepath.Join(local, "f.csv"), false); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, outside); len(got) != 0 {
		t.Errorf("written outside the destination: %v", got)
	}
}

// TestFileShareSuite runs the suite every file share runs.
func TestFileShareSuite(t *testing.T) {
	sharetest.Run(t, sharetest.Harness{New: func(t *testing.T) (services.FileShare, services.Params, string) {
		s, _ := newShare(t)
		return s, nil, "case"
	}, Rooted: true})
}

package ssh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/sharetest"
)

func newShare(t *testing.T, e sshEnv) *FileShareService {
	t.Helper()
	s, err := NewFileShareService(e.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// remoteScratch returns a fresh directory name relative to the login
// directory, removed after the test.
func remoteScratch(t *testing.T, e sshEnv) string {
	t.Helper()
	d := ".bench-test-share-" + uniq(t)
	t.Cleanup(func() { sh(t, e, "rm -rf "+d) })
	return d
}

type fileInfo struct {
	Content string
	Mode    fs.FileMode
}

// tree reads a local directory as path -> content and mode ("/" suffix
// for directories).
func tree(t *testing.T, root string) map[string]fileInfo {
	t.Helper()
	out := map[string]fileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = fileInfo{}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fileInfo{Content: string(b), Mode: info.Mode().Perm()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTree(t *testing.T, root string, files map[string]fileInfo) {
	t.Helper()
	for p, f := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(f.Content), f.Mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, f.Mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFileShareFile(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	ctx := context.Background()
	rdir := remoteScratch(t, e)
	local := t.TempDir()
	src := filepath.Join(local, "config.ini")
	content := "[section]\nkey = it's \"quoted\"\n\x00binary\xff\n"
	if err := os.WriteFile(src, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}

	// Upload creates the parents; the remote copy is byte-exact with mode
	// and time kept.
	if err := s.Upload(ctx, e.params(), src, rdir+"/a/b/config.ini", false); err != nil {
		t.Fatal(err)
	}
	if got, want := sh(t, e, "stat -c '%a %Y %s' "+rdir+"/a/b/config.ini"), fmt.Sprintf("640 1614834367 %d\n", len(content)); got != want {
		t.Errorf("remote mode, mtime, size: %q", got)
	}
	if got := sh(t, e, "ls -A "+rdir+"/a/b"); got != "config.ini\n" {
		t.Errorf("temporary files left: %q", got)
	}
	// Download it back, to a new file and into an existing directory.
	dst := filepath.Join(local, "sub", "back.ini")
	if err := s.Download(ctx, e.params(), rdir+"/a/b/config.ini", dst, false); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(local, "into")
	if err := os.Mkdir(into, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Download(ctx, e.params(), rdir+"/a/b/config.ini", into, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dst, filepath.Join(into, "config.ini")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(p)
		if string(b) != content || info.Mode().Perm() != 0o640 || !info.ModTime().Equal(mtime) {
			t.Errorf("%s: content %q, mode %v, mtime %v", p, b, info.Mode(), info.ModTime())
		}
	}
	// Uploading into an existing remote directory puts the file inside;
	// uploading again overwrites.
	if err := s.Upload(ctx, e.params(), src, rdir+"/a", false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, e.params(), src, rdir+"/a", false); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, e, "cat "+rdir+"/a/config.ini; stat -c ' %a' "+rdir+"/a/config.ini"); got != "v2 600\n" {
		t.Errorf("overwritten file: %q", got)
	}
	// "~/" paths are relative to the login directory.
	if err := s.Upload(ctx, e.params(), src, "~/"+rdir+"/tilde", false); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, e, "cat ~/"+rdir+"/tilde"); got != "v2" {
		t.Errorf("~ path: %q", got)
	}
	if n := s.pool.dials.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestFileShareFolders(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	ctx := context.Background()
	rdir := remoteScratch(t, e)
	files := map[string]fileInfo{
		"top.txt":                {Content: "top\n", Mode: 0o644},
		"run.sh":                 {Content: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"empty":                  {Content: "", Mode: 0o600},
		"a/b/c/deep.json":        {Content: `{"x": [1, 2, 3]}`, Mode: 0o644},
		"a/sibling.bin":          {Content: strings.Repeat("\x00\x01\xfe\xff", 50000), Mode: 0o644},
		"a/b/with space & 'q'.t": {Content: "odd name", Mode: 0o644},
		"emptydir/":              {},
		"a/b/c/":                 {},
		"a/b/":                   {},
		"a/":                     {},
	}
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, files)
	if err := s.Upload(ctx, e.params(), src, rdir+"/up", true); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, e, "cd "+rdir+"/up && find . | sort"); got != ".\n./a\n./a/b\n./a/b/c\n./a/b/c/deep.json\n./a/b/with space & 'q'.t\n./a/sibling.bin\n./empty\n./emptydir\n./run.sh\n./top.txt\n" {
		t.Errorf("remote tree:\n%s", got)
	}
	dst := filepath.Join(t.TempDir(), "down")
	if err := s.Download(ctx, e.params(), rdir+"/up", dst, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, tree(t, dst)); diff != "" {
		t.Errorf("downloaded tree (-want +got):\n%s", diff)
	}
	// Uploading into an existing folder merges.
	extra := filepath.Join(t.TempDir(), "extra")
	writeTree(t, extra, map[string]fileInfo{"a/new.txt": {Content: "new", Mode: 0o644}})
	if err := s.Upload(ctx, e.params(), extra, rdir+"/up", true); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, e, "ls "+rdir+"/up/a"); got != "b\nnew.txt\nsibling.bin\n" {
		t.Errorf("merged folder: %q", got)
	}
	// Folders need recursive.
	if err := s.Upload(ctx, e.params(), src, rdir+"/x", false); err == nil || !strings.Contains(err.Error(), "needs recursive") {
		t.Errorf("upload of a folder without recursive: %v", err)
	}
	if err := s.Download(ctx, e.params(), rdir+"/up", dst, false); err == nil || !strings.Contains(err.Error(), "needs recursive") {
		t.Errorf("download of a folder without recursive: %v", err)
	}
}

func TestFileShareMissing(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	ctx := context.Background()
	rdir := remoteScratch(t, e)
	local := t.TempDir()
	tests := []struct {
		name string
		do   func() error
	}{
		{"upload of a missing file", func() error {
			return s.Upload(ctx, e.params(), filepath.Join(local, "nope"), rdir+"/x", false)
		}},
		{"upload of a missing folder", func() error {
			return s.Upload(ctx, e.params(), filepath.Join(local, "nope"), rdir+"/x", true)
		}},
		{"download of a missing file", func() error {
			return s.Download(ctx, e.params(), rdir+"/nope", filepath.Join(local, "x"), false)
		}},
		{"download of a missing folder", func() error {
			return s.Download(ctx, e.params(), rdir+"/nope/deeper", filepath.Join(local, "x"), true)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "nope") {
				t.Fatalf("err = %v, want fs.ErrNotExist naming the path", err)
			}
		})
	}
	if entries, _ := os.ReadDir(local); len(entries) != 0 {
		t.Errorf("files left locally: %v", entries)
	}
	if err := s.Upload(ctx, services.Params{}, local, "x", true); !errors.Is(err, ErrNoHostname) {
		t.Errorf("no ssh_hostname: %v", err)
	}
}

// TestFileShareLargeFile streams 50 MB each way and compares checksums.
func TestFileShareLargeFile(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	ctx := context.Background()
	rdir := remoteScratch(t, e)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.bin")
	const size = 50 << 20
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rng, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := h.Sum(nil)

	if err := s.Upload(ctx, e.params(), src, rdir+"/big.bin", false); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "back.bin")
	if err := s.Download(ctx, e.params(), rdir+"/big.bin", dst, false); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h2 := sha256.New()
	n, err := io.Copy(h2, g)
	if err != nil {
		t.Fatal(err)
	}
	if n != size || !bytes.Equal(h2.Sum(nil), want) {
		t.Errorf("downloaded %d bytes, checksum differs: %v", n, !bytes.Equal(h2.Sum(nil), want))
	}
}

func TestFileShareCancel(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	rdir := remoteScratch(t, e)
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Upload(ctx, e.params(), src, rdir+"/f", false)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestFileShareReconnects uses the service after its cached connection
// died while idle.
func TestFileShareReconnects(t *testing.T) {
	e := getEnv(t)
	s := newShare(t, e)
	ctx := context.Background()
	rdir := remoteScratch(t, e)
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Upload(ctx, e.params(), src, rdir+"/f", false); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		s.pool.dropAll()
	}
	if n := s.pool.dials.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

// TestFileShareSuite runs the suite every file share runs against the
// test sshd (skipped without it).
func TestFileShareSuite(t *testing.T) {
	e := getEnv(t)
	sharetest.Run(t, sharetest.Harness{New: func(t *testing.T) (services.FileShare, services.Params, string) {
		return newShare(t, e), e.params(), remoteScratch(t, e)
	}})
}

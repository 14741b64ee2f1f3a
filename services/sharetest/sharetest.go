// Package sharetest is the test suite every file share runs (the local
// folder, SSH/SFTP, S3, Azure Files): the same cases, against each share's
// real far side (or the fake it is tested with), so that a behaviour the
// shares promise alike is tested alike. A share's test calls Run with a
// Harness; a share whose server is not available skips there, before Run.
package sharetest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/services"
)

// Harness builds a share for one case of the suite.
type Harness struct {
	// New returns a share, the params its calls take (host coordinates,
	// say), and a fresh remote folder for the case, as a remote path the
	// share accepts (relative to its root, prefix or login folder). The
	// share and the folder are removed by the harness's own cleanups.
	New func(t *testing.T) (share services.FileShare, params services.Params, scratch string)
	// Rooted says the share confines remote paths to its root (the local
	// folder, a bucket prefix, an Azure share): the suite then checks that
	// a remote path climbing above it with ".." is refused. An SSH share
	// is not rooted: its remote paths are the host's.
	Rooted bool
}

// Run runs every case of the suite against the share the harness builds.
func Run(t *testing.T, h Harness) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, h) })
	t.Run("MissingSource", func(t *testing.T) { missingSource(t, h) })
	t.Run("PlantedLink", func(t *testing.T) { plantedLink(t, h) })
	if h.Rooted {
		t.Run("RemoteEscape", func(t *testing.T) { remoteEscape(t, h) })
	}
}

// sample is the folder the cases upload: nested folders, an empty file
// and bytes that are not text.
var sample = map[string][]byte{
	"top.csv":        []byte("metric,value\nscore,1.5\n"),
	"sub/x.csv":      []byte("a,b\n"),
	"sub/deep/y.bin": {0, 1, 2, 0xff, '\n', 0},
	"empty.txt":      {},
}

// WriteTree writes files (slash-separated path -> content) under root.
func WriteTree(t testing.TB, root string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadTree reads the regular files under root as slash-separated path ->
// content.
func ReadTree(t testing.TB, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			t.Errorf("%s: %s is missing", what, k)
		case !inWant:
			t.Errorf("%s: unexpected %s", what, k)
		case !bytes.Equal(w, g):
			t.Errorf("%s: %s holds %q, want %q", what, k, g, w)
		}
	}
}

// roundTrip: a folder uploaded and downloaded again comes back whole, and
// so does a single file.
func roundTrip(t *testing.T, h Harness) {
	s, params, scratch := h.New(t)
	ctx := t.Context()
	src := t.TempDir()
	WriteTree(t, src, sample)
	remote := path.Join(scratch, "res")
	if err := s.Upload(ctx, params, src, remote, true); err != nil {
		t.Fatalf("folder upload: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if err := s.Download(ctx, params, remote, dst, true); err != nil {
		t.Fatalf("folder download: %v", err)
	}
	sameTree(t, "folder round trip", sample, ReadTree(t, dst))

	one := filepath.Join(t.TempDir(), "one.json")
	if err := os.WriteFile(one, []byte(`{"x": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, params, one, path.Join(scratch, "one.json"), false); err != nil {
		t.Fatalf("file upload: %v", err)
	}
	back := filepath.Join(t.TempDir(), "back.json")
	if err := s.Download(ctx, params, path.Join(scratch, "one.json"), back, false); err != nil {
		t.Fatalf("file download: %v", err)
	}
	if b, err := os.ReadFile(back); err != nil || string(b) != `{"x": 1}` {
		t.Errorf("file round trip: %q, %v", b, err)
	}
}

// missingSource: uploading a local path that does not exist, or
// downloading a remote file that does not exist, is an error and writes
// nothing.
func missingSource(t *testing.T, h Harness) {
	s, params, scratch := h.New(t)
	ctx := t.Context()
	missing := filepath.Join(t.TempDir(), "no-such-file")
	if err := s.Upload(ctx, params, missing, path.Join(scratch, "up"), false); err == nil {
		t.Error("uploading a missing file: no error")
	}
	if err := s.Upload(ctx, params, missing, path.Join(scratch, "upd"), true); err == nil {
		t.Error("uploading a missing folder: no error")
	}
	dst := t.TempDir()
	if err := s.Download(ctx, params, path.Join(scratch, "no-such-file"), filepath.Join(dst, "f"), false); err == nil {
		t.Error("downloading a missing file: no error")
	}
	if got := ReadTree(t, dst); len(got) != 0 {
		t.Errorf("a failed download wrote %v", got)
	}
}

// plantedLink: a folder download into a destination that holds symbolic
// links to the outside (planted by a trial's scripts, say), one at a
// folder's name and one at a file's, is refused with safefs.ErrOutside,
// and nothing is written outside the destination.
func plantedLink(t *testing.T, h Harness) {
	s, params, scratch := h.New(t)
	ctx := t.Context()
	src := t.TempDir()
	WriteTree(t, src, map[string][]byte{"top.csv": []byte("a\n"), "sub/x.csv": []byte("b\n")})
	remote := path.Join(scratch, "res")
	if err := s.Upload(ctx, params, src, remote, true); err != nil {
		t.Fatal(err)
	}
	outside, dst := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dst, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "top.csv"), filepath.Join(dst, "top.csv")); err != nil {
		t.Fatal(err)
	}
	if err := s.Download(ctx, params, remote, dst, true); !errors.Is(err, safefs.ErrOutside) {
		t.Errorf("download through a planted link: %v, want safefs.ErrOutside", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the destination: %v", entries)
	}
}

// remoteEscape: on a rooted share, a remote path that climbs above the
// root with ".." is refused with an error that says so, for upload and
// download, file and folder, and a refused download writes nothing.
func remoteEscape(t *testing.T, h Harness) {
	s, params, scratch := h.New(t)
	ctx := t.Context()
	src := t.TempDir()
	WriteTree(t, src, map[string][]byte{"f.txt": []byte("x")})
	dst := t.TempDir()
	refused := func(what, remote string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "root") {
			t.Errorf("%s %q: %v, want a refusal to leave the share's root", what, remote, err)
		}
	}
	for _, remote := range []string{"..", "../escape", scratch + "/../../escape", "a/../../escape"} {
		refused("file upload to", remote, s.Upload(ctx, params, filepath.Join(src, "f.txt"), remote, false))
		refused("folder upload to", remote, s.Upload(ctx, params, src, remote, true))
		refused("file download from", remote, s.Download(ctx, params, remote, filepath.Join(dst, "f"), false))
		refused("folder download from", remote, s.Download(ctx, params, remote, filepath.Join(dst, "d"), true))
	}
	if got := ReadTree(t, dst); len(got) != 0 {
		t.Errorf("refused downloads wrote %v", got)
	}
}

package checkpoint

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "model", "layers"), 0o755))
	must(os.WriteFile(filepath.Join(src, "epochs_done"), []byte("9\n"), 0o644))
	must(os.WriteFile(filepath.Join(src, "model", "layers", "w.bin"), bytes.Repeat([]byte{1, 2, 3}, 100000), 0o600))
	must(os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("model/layers/w.bin", filepath.Join(src, "latest")))  // inside: kept
	must(os.Symlink("/etc/passwd", filepath.Join(src, "abs")))            // leaves: left out
	must(os.Symlink("../../outside", filepath.Join(src, "model", "esc"))) // leaves: left out
	var buf bytes.Buffer
	n, skipped, err := Pack(context.Background(), src, &buf)
	must(err)
	if n != 6 || len(skipped) != 2 {
		t.Errorf("packed %d entries (want 6), skipped %q (want the 2 links that leave)", n, skipped)
	}
	dst := t.TempDir()
	must(Unpack(context.Background(), bytes.NewReader(buf.Bytes()), dst))
	for name, want := range map[string]string{"epochs_done": "9\n", "latest": strings.Repeat("\x01\x02\x03", 100000)} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v %v, want mode 0755", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "latest")); err != nil || l != "model/layers/w.bin" {
		t.Errorf("latest -> %q %v", l, err)
	}
	for _, name := range []string{"abs", "model/esc"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was unpacked: %v", name, err)
		}
	}
}

// entry is one planted tar entry.
type entry struct {
	name, link string
	typ        byte
	body       string
}

func archive(t *testing.T, ents ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackRejectsMaliciousArchives plants archives that try to write
// outside the checkpoint directory: every one is refused with ErrUnsafe
// (or os.Root's refusal of a path through a link), and nothing appears
// outside the directory.
func TestUnpackRejectsMaliciousArchives(t *testing.T) {
	cases := []struct {
		name string
		ents []entry
	}{
		{"absolute name", []entry{{name: "/tmp/OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"dot-dot", []entry{{name: "../OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"dot-dot inside a name", []entry{{name: "a/../../OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"absolute link", []entry{{name: "l", link: "/", typ: tar.TypeSymlink}, {name: "l/OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"relative link that leaves", []entry{{name: "a/l", link: "../../", typ: tar.TypeSymlink}, {name: "a/l/OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"write through a link", []entry{{name: "l", link: "x/../..", typ: tar.TypeSymlink}, {name: "l/OUTSIDE", typ: tar.TypeReg, body: "x"}}},
		{"link below a link", []entry{{name: "d", link: ".", typ: tar.TypeSymlink}, {name: "d/l", link: "../OUTSIDE", typ: tar.TypeSymlink}}},
		{"file below a link", []entry{{name: "d", link: "sub", typ: tar.TypeSymlink}, {name: "sub/", typ: tar.TypeDir}, {name: "d/f", typ: tar.TypeReg, body: "x"}}},
		{"hard link", []entry{{name: "h", link: "/etc/passwd", typ: tar.TypeLink}}},
		{"device", []entry{{name: "dev", typ: tar.TypeChar}}},
		{"fifo", []entry{{name: "fifo", typ: tar.TypeFifo}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "a", "ckpt")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := Unpack(context.Background(), bytes.NewReader(archive(t, c.ents...)), dir)
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("Unpack: %v, want an error wrapping ErrUnsafe", err)
			}
			for _, p := range []string{filepath.Join(base, "OUTSIDE"), filepath.Join(base, "a", "OUTSIDE"), "/OUTSIDE", "/tmp/OUTSIDE"} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

func TestUnpackRejectsNonGzip(t *testing.T) {
	if err := Unpack(context.Background(), strings.NewReader("not an archive"), t.TempDir()); err == nil {
		t.Error("want an error")
	}
}

func TestParseStoreAndObjectURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://bucket":               "s3://bucket",
		"s3://my-bucket/a/b/":       "s3://my-bucket/a/b",
		" s3://b.example.com/ckpt ": "s3://b.example.com/ckpt",
	} {
		if got, err := ParseStore(in); err != nil || got != want {
			t.Errorf("ParseStore(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/shared/ckpt", "file:///x", "s3://", "s3://B", "s3://bucket/a//b", "s3://bucket/../x",
		"s3://bucket/a/./b", "s3://bucket/a?x=1", "s3://AKIAXXXX:hunter2@bucket/x"} {
		_, err := ParseStore(in)
		if err == nil {
			t.Errorf("ParseStore(%q): no error", in)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseStore(%q): the error shows the secret: %v", in, err)
		}
	}
	for _, c := range []struct {
		exp  string
		id   int
		want string
	}{
		{"mf", 7, "s3://bkt/p/mf/trial-7.tar.gz"},
		{"a/b", 1, "s3://bkt/p/a%2Fb/trial-1.tar.gz"},
		{"..", 2, "s3://bkt/p/%2E%2E/trial-2.tar.gz"},
		{".", 3, "s3://bkt/p/%2E/trial-3.tar.gz"},
	} {
		got, err := ObjectURL("s3://bkt/p", c.exp, c.id)
		if err != nil || got != c.want {
			t.Errorf("ObjectURL(%q, %d) = %q, %v; want %q", c.exp, c.id, got, err, c.want)
		}
	}
	if _, err := ObjectURL("s3://bkt/p", "", 1); err == nil {
		t.Error("ObjectURL without an experiment: no error")
	}
}

package aws

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/sharetest"
)

func TestCleanRemote(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "", want: ""},
		{in: "/", want: ""},
		{in: ".", want: ""},
		{in: "a/b/c.txt", want: "a/b/c.txt"},
		{in: "/a//b/./c/", want: "a/b/c"},
		{in: "a/../b", want: "b"},
		{in: "a/b/../../c", want: "c"},
		{in: "..", wantErr: true},
		{in: "../x", wantErr: true},
		{in: "/../x", wantErr: true},
		{in: "a/../../x", wantErr: true},
		{in: "a/b/../../../etc/passwd", wantErr: true},
		{in: "x..y/..z", want: "x..y/..z"},
	}
	for _, tc := range tests {
		got, err := cleanRemote(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("cleanRemote(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "climbs above the share's root") {
				t.Errorf("cleanRemote(%q) error = %q, want it to say the path climbs above the root", tc.in, err)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("cleanRemote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestS3ConfigErrors(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		name string
		cfg  map[string]any
		want string // substring of the error
	}{
		{"no bucket", map[string]any{"prefix": "x"}, "/config/bucket: an S3 bucket name is required"},
		{"small parts", map[string]any{"bucket": "b", "part_size_mb": 4}, "/config/part_size_mb: the part size must be at least 5"},
		{"fractional parts", map[string]any{"bucket": "b", "part_size_mb": 5.5}, "/config/part_size_mb"},
		{"no concurrency", map[string]any{"bucket": "b", "concurrency": 0}, "/config/concurrency: the concurrency must be at least 1"},
		{"unknown key", map[string]any{"bucket": "b", "bukket": "c"}, `/config/bukket: unknown config key "bukket"`},
		{"wrong type", map[string]any{"bucket": 3}, "/config/bucket: config key"},
		{"escaping prefix", map[string]any{"bucket": "b", "prefix": "../up"}, "/config/prefix: remote path \"../up\" climbs above"},
		{"bad endpoint", map[string]any{"bucket": "b", "endpoint": "localhost:9000"}, "/config/endpoint: config key \"endpoint\": \"localhost:9000\" is not an http:// or https:// URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.New(t.Context(), services.Spec{Class: S3ClassShort, Config: tc.cfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// newMotoS3 returns an S3FileShareService on a fresh bucket of the moto
// server, built through the class registry like a config would.
func newMotoS3(t *testing.T, extra map[string]any) (*S3FileShareService, string) {
	t.Helper()
	ep := motoEnv(t)
	bucket := uniqueName(t, "bench-test-")
	cfg := map[string]any{"bucket": bucket, "endpoint": ep, "use_path_style": true, "region": "us-east-1"}
	for k, v := range extra {
		cfg[k] = v
	}
	svc, err := services.New(t.Context(), services.Spec{Class: S3ClassFull, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s := svc.(*S3FileShareService)
	if _, err := s.client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return s, bucket
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// writeTree creates files (path -> content; a path ending in "/" is an
// empty folder) under root.
func writeTree(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every file under root (path -> content; empty folders as
// "path/" -> nil).
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			if len(ents) == 0 {
				out[rel+"/"] = nil
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listKeys(t *testing.T, s *S3FileShareService) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys
}

func TestS3FolderRoundTrip(t *testing.T) {
	s, _ := newMotoS3(t, map[string]any{"prefix": "/exp/42/"})
	ctx := t.Context()
	tree := map[string][]byte{
		"top.txt":                 []byte("top\n"),
		"empty.bin":               {},
		"binary.dat":              randomBytes(t, 70000),
		"sub/a.csv":               []byte("x,y\n1,2\n"),
		"sub/deeper/b.json":       []byte(`{"k": "v"}`),
		"sub/with space/ü ñ.txt":  []byte("unicode names\n"),
		"emptydir/":               nil,
		"sub/deeper/also-empty/":  nil,
		"sub/deeper/deepest/c.sh": []byte("#!/bin/sh\necho hi\n"),
	}
	src := t.TempDir()
	writeTree(t, src, tree)

	if err := s.Upload(ctx, nil, src, "runs/r1", true); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{
		"exp/42/runs/r1/binary.dat",
		"exp/42/runs/r1/empty.bin",
		"exp/42/runs/r1/emptydir/",
		"exp/42/runs/r1/sub/a.csv",
		"exp/42/runs/r1/sub/deeper/also-empty/",
		"exp/42/runs/r1/sub/deeper/b.json",
		"exp/42/runs/r1/sub/deeper/deepest/c.sh",
		"exp/42/runs/r1/sub/with space/ü ñ.txt",
		"exp/42/runs/r1/top.txt",
	}
	if diff := cmp.Diff(wantKeys, listKeys(t, s)); diff != "" {
		t.Errorf("object keys (-want +got):\n%s", diff)
	}

	t.Run("recursive download", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "new", "dir")
		if err := s.Download(ctx, nil, "runs/r1", dst, true); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tree, readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
	t.Run("non-recursive download", func(t *testing.T) {
		dst := t.TempDir()
		if err := s.Download(ctx, nil, "/runs/./r1/", dst, false); err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"top.txt": tree["top.txt"], "empty.bin": {}, "binary.dat": tree["binary.dat"], "emptydir/": nil}
		if diff := cmp.Diff(want, readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
	t.Run("one file of the folder", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "x", "b.json")
		if err := s.Download(ctx, nil, "runs/r1/sub/deeper/b.json", dst, false); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, tree["sub/deeper/b.json"]) {
			t.Errorf("content = %q, want %q", got, tree["sub/deeper/b.json"])
		}
		if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
			t.Errorf("the download left %d entries in its folder, want only the file (no temporary files)", len(ents))
		}
	})
	t.Run("non-recursive upload", func(t *testing.T) {
		if err := s.Upload(ctx, nil, src, "flat", false); err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		if err := s.Download(ctx, nil, "flat", dst, true); err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"top.txt": tree["top.txt"], "empty.bin": {}, "binary.dat": tree["binary.dat"]}
		if diff := cmp.Diff(want, readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
}

func TestS3FileRoundTripAndOverwrite(t *testing.T) {
	s, _ := newMotoS3(t, nil)
	ctx := t.Context()
	dir := t.TempDir()
	src := filepath.Join(dir, "in.bin")
	for i, size := range []int{0, 1, 4096, 100003} {
		data := randomBytes(t, size)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// The same key every time: later uploads overwrite.
		if err := s.Upload(ctx, nil, src, "a/b/file.bin", false); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "out.bin") // overwritten each round
		if err := s.Download(ctx, nil, "a/b/file.bin", dst, false); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("round %d: downloaded %d bytes that differ from the %d uploaded", i, len(got), len(data))
		}
	}
}

func TestS3MultipartLargeFile(t *testing.T) {
	s, bucket := newMotoS3(t, map[string]any{"part_size_mb": 5, "concurrency": 3, "prefix": "big"})
	ctx := t.Context()
	data := randomBytes(t, 12*mib+12345) // three parts of at most 5 MiB
	src := filepath.Join(t.TempDir(), "large.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, nil, src, "large.bin", false); err != nil {
		t.Fatal(err)
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("big/large.bin")})
	if err != nil {
		t.Fatal(err)
	}
	// A multipart object's ETag is "<md5 of the parts' md5s>-<parts>".
	if etag := strings.Trim(aws.ToString(head.ETag), `"`); !strings.HasSuffix(etag, "-3") {
		t.Errorf("ETag = %q, want a multipart ETag ending in -3 (three parts)", etag)
	}
	if got := aws.ToInt64(head.ContentLength); got != int64(len(data)) {
		t.Errorf("ContentLength = %d, want %d", got, len(data))
	}
	dst := filepath.Join(t.TempDir(), "large.out")
	if err := s.Download(ctx, nil, "large.bin", dst, false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes that differ from the %d uploaded", len(got), len(data))
	}
}

func TestS3Errors(t *testing.T) {
	s, _ := newMotoS3(t, map[string]any{"prefix": "p"})
	ctx := t.Context()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, nil, file, "present/f.txt", false); err != nil {
		t.Fatal(err)
	}

	t.Run("missing remote file or folder", func(t *testing.T) {
		for _, remote := range []string{"absent.txt", "absent/dir", "present/f.txt/more", "presen"} {
			err := s.Download(ctx, nil, remote, filepath.Join(dir, "out"), true)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Download(%q) error = %v, want fs.ErrNotExist", remote, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed download created its target: %v", err)
		}
	})
	t.Run("missing local source", func(t *testing.T) {
		err := s.Upload(ctx, nil, filepath.Join(dir, "nope"), "x", true)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Upload error = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("paths escaping the prefix", func(t *testing.T) {
		for _, remote := range []string{"../p2/x", "a/../../x", "/../../etc"} {
			if err := s.Upload(ctx, nil, file, remote, false); err == nil || !strings.Contains(err.Error(), "climbs above the share's root") {
				t.Errorf("Upload(%q) error = %v, want a refusal", remote, err)
			}
			if err := s.Download(ctx, nil, remote, filepath.Join(dir, "o"), false); err == nil || !strings.Contains(err.Error(), "climbs above the share's root") {
				t.Errorf("Download(%q) error = %v, want a refusal", remote, err)
			}
		}
		if diff := cmp.Diff([]string{"p/present/f.txt"}, listKeys(t, s)); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
	})
	t.Run("download onto a folder", func(t *testing.T) {
		err := s.Download(ctx, nil, "present/f.txt", dir, false)
		if err == nil || !strings.Contains(err.Error(), "is a folder") {
			t.Errorf("error = %v, want a refusal to replace a folder", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		other := *s
		other.bucket = uniqueName(t, "bench-absent-")
		err := other.Upload(ctx, nil, file, "x", false)
		if err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
			t.Errorf("error = %v, want NoSuchBucket", err)
		}
	})
}

func TestS3KeysOutsideTheTargetAreRefused(t *testing.T) {
	s, bucket := newMotoS3(t, nil)
	ctx := t.Context()
	// An object whose key holds ".." cannot come from Upload, but another
	// tool may have written it; downloading its folder must not write
	// outside the target.
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("d/../../evil.txt"), Body: strings.NewReader("x"),
	}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	err := s.Download(ctx, nil, "d", filepath.Join(parent, "in", "d"), true)
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("error = %v, want a refusal to write outside the target", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "evil.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("evil.txt was written outside the target: %v", err)
	}
}

// TestS3Suite runs the suite every file share runs against the moto
// server (skipped without it), each case on a fresh bucket.
func TestS3Suite(t *testing.T) {
	motoEnv(t)
	sharetest.Run(t, sharetest.Harness{New: func(t *testing.T) (services.FileShare, services.Params, string) {
		s, _ := newMotoS3(t, map[string]any{"prefix": "suite"})
		return s, nil, "case"
	}, Rooted: true})
}

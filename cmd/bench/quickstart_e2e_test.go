package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartCopiedElsewhere: the README calls configs/examples/quickstart
// a template; a copy of the folder outside the repository (its shipit
// workload is its own Go module) runs as it is, from the folder above it.
func TestQuickstartCopiedElsewhere(t *testing.T) {
	root, _ := filepath.Abs("../..")
	src := filepath.Join(root, "configs/examples/quickstart")
	dir := t.TempDir()
	dst := filepath.Join(dir, "quickstart")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	r := runBench(t, dir, "--config", "quickstart/cli.jsonc", "--max_suggestions", "3", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "3 trials (3 succeeded, 0 failed)") || !strings.Contains(r.stdout, "Best trial") {
		t.Errorf("summary:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bench.sqlite")); err != nil {
		t.Errorf("no storage in the copy's folder: %v", err)
	}
}

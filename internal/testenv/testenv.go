// Package testenv gives tests the coordinates of the real servers that
// scripts/test.sh starts (sshd, moto, PostgreSQL, ...).
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Strict reports whether missing servers are failures (set by
// scripts/test.sh and CI) rather than reasons to skip.
func Strict() bool { return os.Getenv("BENCH_TEST_STRICT") == "1" }

// Get returns the value of an environment variable set by scripts/test.sh.
// When it is unset the test is skipped, or fails under BENCH_TEST_STRICT=1.
func Get(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if Strict() {
			t.Fatalf("%s is not set: scripts/test.sh should have started the server this test needs", name)
		}
		t.Skipf("%s is not set: run `make test` (scripts/test.sh) to start the server this test needs", name)
	}
	return v
}

// ConformanceDir returns mlos_bench's schema test cases: the folder
// ../shared/conformance/mlos_bench/schema-cases next to the repository
// (found by walking up from the test's folder to go.mod). When it is
// missing the test is skipped, or fails under BENCH_TEST_STRICT=1 (CI
// has it there).
func ConformanceDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
	root := filepath.Join(dir, "..", "shared", "conformance", "mlos_bench", "schema-cases")
	if _, err := os.Stat(root); err != nil {
		if Strict() {
			t.Fatalf("mlos_bench schema test cases not found at %s: %v", root, err)
		}
		t.Skipf("mlos_bench schema test cases not found at %s (%v); they live in the shared workspace next to the repository", root, err)
	}
	return root
}

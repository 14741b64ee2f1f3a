// Package testenv gives tests the coordinates of the real servers that
// scripts/test.sh starts (sshd, moto, PostgreSQL, ...).
package testenv

import (
	"os"
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

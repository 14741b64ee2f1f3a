// Package testenv gives tests the coordinates of the real servers that
// scripts/test.sh starts (sshd, moto, PostgreSQL, ...), and the folder of
// mlos_bench's schema test cases.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Environment variables of the conformance tests.
const (
	// ConformanceDirEnv points at mlos_bench's schema test cases: an MLOS
	// checkout, its mlos_bench/mlos_bench/tests/config/schemas folder, or
	// a folder laid out as <kind>/{good,bad}/<subtype>/*.jsonc (the copy
	// in ../shared/conformance/mlos_bench/schema-cases).
	ConformanceDirEnv = "BENCH_CONFORMANCE_DIR"
	// RequireConformanceEnv set to 1 makes missing schema test cases a
	// test failure instead of a skip. CI (.ci/run) sets it: its checkout
	// has ../shared beside it. BENCH_TEST_STRICT alone does not, so that
	// `make test` passes in a user's clone.
	RequireConformanceEnv = "BENCH_TEST_REQUIRE_CONFORMANCE"
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

// conformanceKinds are the schema kinds of mlos_bench's test cases (the
// folder names under tests/config/schemas of an MLOS checkout).
var conformanceKinds = []string{
	"cli", "environments", "globals", "optimizers", "schedulers", "services",
	"storage", "tunable-params", "tunable-values",
}

// ConformanceDir returns a folder of mlos_bench's schema test cases laid
// out as <kind>/{good,bad}/<subtype>/<case>.jsonc. It is, in this order:
// the folder $BENCH_CONFORMANCE_DIR names (an MLOS checkout is seen
// through a temporary folder of links in that layout); or
// ../shared/conformance/mlos_bench/schema-cases beside the repository
// (found by walking up from the test's folder to go.mod). When neither is
// there the test is skipped with a message saying how to run it, or fails
// when BENCH_TEST_REQUIRE_CONFORMANCE=1 (CI). A BENCH_CONFORMANCE_DIR
// that holds no test cases always fails: it was asked for.
func ConformanceDir(t testing.TB) string {
	t.Helper()
	dir, why := findConformance(t)
	if dir != "" {
		return dir
	}
	if os.Getenv(RequireConformanceEnv) == "1" {
		t.Fatalf("mlos_bench's schema test cases are required (%s=1) but %s", RequireConformanceEnv, why)
	}
	t.Skipf("skipped: this test needs mlos_bench's schema test cases, and %s; "+
		"to run it, set %s to an MLOS checkout (https://github.com/microsoft/MLOS) or its mlos_bench/mlos_bench/tests/config/schemas folder, "+
		"or put the cases at ../shared/conformance/mlos_bench/schema-cases beside the repository", why, ConformanceDirEnv)
	return ""
}

// OptionalConformanceDir is ConformanceDir for tests that also run
// without the cases (a fuzz test with seeds of its own): where
// ConformanceDir skips, it logs why and returns "".
func OptionalConformanceDir(t testing.TB) string {
	t.Helper()
	dir, why := findConformance(t)
	if dir == "" {
		if os.Getenv(RequireConformanceEnv) == "1" {
			t.Fatalf("mlos_bench's schema test cases are required (%s=1) but %s", RequireConformanceEnv, why)
		}
		t.Logf("running without mlos_bench's schema test cases (%s); set %s to an MLOS checkout to add them", why, ConformanceDirEnv)
	}
	return dir
}

// findConformance returns the test cases' folder, or "" and why not.
func findConformance(t testing.TB) (string, string) {
	t.Helper()
	if env := os.Getenv(ConformanceDirEnv); env != "" {
		dir, err := conformanceView(t, env)
		if err != nil {
			t.Fatalf("%s=%s: %v", ConformanceDirEnv, env, err)
		}
		return dir, ""
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(root, "..", "shared", "conformance", "mlos_bench", "schema-cases")
	if hasCaseLayout(shared) {
		return shared, ""
	}
	return "", fmt.Sprintf("%s is not set and %s does not exist", ConformanceDirEnv, filepath.Clean(shared))
}

// moduleRoot returns the folder of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

// hasCaseLayout reports whether dir holds <kind>/good folders.
func hasCaseLayout(dir string) bool {
	for _, k := range conformanceKinds {
		if fi, err := os.Stat(filepath.Join(dir, k, "good")); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// conformanceView returns a folder in the case layout for dir: dir itself
// when it has that layout, else a temporary copy of the <kind>/test-cases
// folders of an MLOS checkout's tests/config/schemas, as <kind>/... (a
// copy, not links, so that filepath.WalkDir sees every case).
func conformanceView(t testing.TB, dir string) (string, error) {
	if hasCaseLayout(dir) {
		return dir, nil
	}
	for _, schemas := range []string{
		dir,
		filepath.Join(dir, "mlos_bench", "mlos_bench", "tests", "config", "schemas"),
		filepath.Join(dir, "mlos_bench", "tests", "config", "schemas"),
		filepath.Join(dir, "tests", "config", "schemas"),
	} {
		view := ""
		for _, k := range conformanceKinds {
			cases := filepath.Join(schemas, k, "test-cases")
			if fi, err := os.Stat(cases); err != nil || !fi.IsDir() {
				continue
			}
			if view == "" {
				view = t.TempDir()
			}
			if err := os.CopyFS(filepath.Join(view, k), os.DirFS(cases)); err != nil {
				return "", err
			}
		}
		if view != "" {
			return view, nil
		}
	}
	return "", fmt.Errorf("no mlos_bench schema test cases there: expected an MLOS checkout, its mlos_bench/mlos_bench/tests/config/schemas folder (<kind>/test-cases/good/...), or folders <kind>/good/... such as cli/good")
}

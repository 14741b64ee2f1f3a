package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelperConformanceDir is run by the tests below as a child process,
// in a folder of their choosing, to see what ConformanceDir does there.
func TestHelperConformanceDir(t *testing.T) {
	if os.Getenv("BENCH_TESTENV_HELPER") != "1" {
		t.Skip("helper for TestConformanceDirChild")
	}
	if os.Getenv("BENCH_TESTENV_OPTIONAL") == "1" {
		t.Logf("DIR=[%s]", OptionalConformanceDir(t))
		return
	}
	t.Logf("DIR=[%s]", ConformanceDir(t))
}

// writeCase writes one case file under root.
func writeCase(t *testing.T, root string, parts ...string) {
	t.Helper()
	p := filepath.Join(append([]string{root}, parts...)...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runHelper runs TestHelperConformanceDir in a fresh module folder that
// has no ../shared beside it, with BENCH_TEST_STRICT=1 and the given
// extra environment.
func runHelper(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module clone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperConformanceDir$", "-test.v")
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != ConformanceDirEnv && k != RequireConformanceEnv && k != "BENCH_TEST_STRICT" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, append([]string{"BENCH_TESTENV_HELPER=1", "BENCH_TEST_STRICT=1"}, extra...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestConformanceDirChild(t *testing.T) {
	mlos := t.TempDir()
	writeCase(t, mlos, "mlos_bench", "mlos_bench", "tests", "config", "schemas", "cli", "test-cases", "good", "full", "full-cli.jsonc")
	writeCase(t, mlos, "mlos_bench", "mlos_bench", "tests", "config", "schemas", "services", "test-cases", "bad", "invalid", "x.jsonc")

	tests := []struct {
		name     string
		env      []string
		wantFail bool
		want     []string // substrings of the output
	}{
		{
			name: "strict alone skips in a clone without ../shared",
			want: []string{"--- SKIP: TestHelperConformanceDir", "needs mlos_bench's schema test cases", ConformanceDirEnv + " is not set", "set " + ConformanceDirEnv + " to an MLOS checkout", "../shared/conformance/mlos_bench/schema-cases"},
		},
		{
			name:     "required by CI fails",
			env:      []string{RequireConformanceEnv + "=1"},
			wantFail: true,
			want:     []string{"--- FAIL: TestHelperConformanceDir", "are required (" + RequireConformanceEnv + "=1)"},
		},
		{
			name: "optional runs without the cases",
			env:  []string{"BENCH_TESTENV_OPTIONAL=1"},
			want: []string{"--- PASS: TestHelperConformanceDir", "running without mlos_bench's schema test cases", "DIR=[]"},
		},
		{
			name: "an MLOS checkout",
			env:  []string{ConformanceDirEnv + "=" + mlos},
			want: []string{"--- PASS: TestHelperConformanceDir", "DIR=["},
		},
		{
			name:     "a folder without cases fails even when not required",
			env:      []string{ConformanceDirEnv + "=" + t.TempDir()},
			wantFail: true,
			want:     []string{"--- FAIL: TestHelperConformanceDir", "no mlos_bench schema test cases there"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runHelper(t, tc.env...)
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if failed := err != nil; failed != tc.wantFail {
				t.Errorf("failed = %v, want %v; output:\n%s", failed, tc.wantFail, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestConformanceDirLayouts(t *testing.T) {
	t.Setenv(RequireConformanceEnv, "")
	t.Run("MLOS checkout", func(t *testing.T) {
		mlos := t.TempDir()
		schemas := filepath.Join(mlos, "mlos_bench", "mlos_bench", "tests", "config", "schemas")
		writeCase(t, schemas, "cli", "test-cases", "good", "full", "full-cli.jsonc")
		writeCase(t, schemas, "tunable-params", "test-cases", "bad", "invalid", "bad.jsonc")
		for _, dir := range []string{mlos, schemas} {
			t.Setenv(ConformanceDirEnv, dir)
			got := ConformanceDir(t)
			for _, f := range []string{"cli/good/full/full-cli.jsonc", "tunable-params/bad/invalid/bad.jsonc"} {
				if _, err := os.Stat(filepath.Join(got, f)); err != nil {
					t.Errorf("%s=%s: %v", ConformanceDirEnv, dir, err)
				}
			}
		}
	})
	t.Run("case layout is used as it is", func(t *testing.T) {
		dir := t.TempDir()
		writeCase(t, dir, "globals", "good", "full", "g.jsonc")
		t.Setenv(ConformanceDirEnv, dir)
		if got := ConformanceDir(t); got != dir {
			t.Errorf("ConformanceDir = %s, want %s", got, dir)
		}
	})
}

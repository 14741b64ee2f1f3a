package local

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the package's tests with a TMPDIR of their own and fails
// when anything is left in it: every temp folder a test's services make
// (spares included) must be gone when the tests end.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "bench-local-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	if had {
		os.Setenv("TMPDIR", old)
	} else {
		os.Unsetenv("TMPDIR")
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		fmt.Fprintf(os.Stderr, "a test left %s in $TMPDIR\n", e.Name())
		code = 1
	}
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

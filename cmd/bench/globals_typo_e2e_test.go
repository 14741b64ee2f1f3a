package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobalsFileTypoWarns: a globals-file key that nothing reads and
// that is one edit from a key something reads (a const_arg, a tunable) is
// a warning naming file:line:col and the key meant, as the same typo as a
// --flag is; a free-form key far from every read one, and keys that are
// read (a required_args name included), are not; the run still succeeds
// (globals files are free-form).
func TestGlobalsFileTypoWarns(t *testing.T) {
	dir := experiment(t, "")
	env, err := os.ReadFile(filepath.Join(dir, "env.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "env.jsonc", strings.Replace(string(env), `"run": [`, `"required_args": ["marker_dirs"], "run": [`, 1), 0o644)
	write(t, dir, "globals.jsonc", `{
	"marker_dri": "/nowhere",
	"mdoe": "b",
	"owner_note": "tuning run for the Q3 report",
	"xv": 40,
	"marker_dirs": "/elsewhere"
}`, 0o644)
	r := runBench(t, dir, "run", "--environment", "env.jsonc", "--globals", "globals.jsonc",
		"--storage", "storage/in-memory.jsonc", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		`bench: warning: globals.jsonc:2:2: globals key "marker_dri": no config of this run has a key "marker_dri" and bench does not read it, so it has no effect (it is kept as a global, as mlos_bench does); did you mean "marker_dir"?`,
		`bench: warning: globals.jsonc:3:2: globals key "mdoe": `,
		`did you mean "mode"?`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, quiet := range []string{"owner_note", `"xv"`, `"marker_dirs"`} {
		if strings.Contains(r.stderr, quiet) {
			t.Errorf("stderr warns about %s:\n%s", quiet, r.stderr)
		}
	}
	// The same key given as --NAME VALUE is UnreadGlobals' warning, once.
	r = runBench(t, dir, "run", "--environment", "env.jsonc", "--globals", "globals.jsonc",
		"--storage", "storage/in-memory.jsonc", "--no-progress", "--mdoe", "a")
	if n := strings.Count(r.stderr, "warning: --mdoe: "); n != 1 || strings.Contains(r.stderr, `globals key "mdoe"`) || !strings.Contains(r.stderr, "did you mean --mode?") {
		t.Errorf("want one warning about --mdoe (got %d), none about the globals key:\n%s", n, r.stderr)
	}
}

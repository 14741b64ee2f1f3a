package main

import (
	"strings"
	"testing"
)

// A newcomer who passes the database file itself to --storage (it takes a
// storage config) gets an error that says so, not a JSON syntax error
// about the word "SQLite".
func TestStorageGivenTheDatabaseFile(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"results", "--storage", "bench.sqlite"},
		{"show", "1", "--storage", "bench.sqlite"},
		{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "bench.sqlite"},
	} {
		r := runBench(t, dir, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "syntax error") || !strings.Contains(r.stderr, "bench.sqlite: an SQLite database, not a config file: --storage takes a storage config") {
			t.Errorf("%v: stderr does not explain that --storage takes a config:\n%s", args, r.stderr)
		}
	}
}

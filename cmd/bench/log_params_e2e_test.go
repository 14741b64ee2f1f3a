package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLogFileTrialStartedParams: the --log_file line of a started trial
// gives its parameters as key=value pairs sorted by name, not Go's
// map[...] syntax.
func TestLogFileTrialStartedParams(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--storage", "storage/in-memory.jsonc",
		"--log_file", "bench.log", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "bench.log"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	re := regexp.MustCompile(`(?m) INFO trial started trial=1 runner=1 params\.mode=a params\.xv=50$`)
	if !re.MatchString(text) {
		t.Errorf("log file lacks a line matching %s:\n%s", re, text)
	}
	if strings.Contains(text, "map[") {
		t.Errorf("log file has Go map syntax:\n%s", text)
	}
}

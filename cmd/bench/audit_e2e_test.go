package main

import (
	"os"
	"path/filepath"
	"regexp"
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

// The commands an example's README gives one after the other read the
// storage the run wrote: a run with --storage X followed by "bench results"
// without it would read another database (bench.sqlite) and find nothing.
func TestExampleReadmeCommandsShareStorage(t *testing.T) {
	files, err := filepath.Glob("../../configs/examples/*/README.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example READMEs: %v", err)
	}
	storageOf := func(line string) string {
		f := strings.Fields(line)
		for i, w := range f {
			if (w == "--storage" || w == "--storage=") && i+1 < len(f) {
				return f[i+1]
			}
			if v, ok := strings.CutPrefix(w, "--storage="); ok {
				return v
			}
		}
		return ""
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inBlock, runStorage, sawRun := false, "", false
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock, sawRun = !inBlock, false
				continue
			}
			if !inBlock {
				continue
			}
			cmd := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			switch {
			case regexp.MustCompile(`(^|[\s/])bench (run\s|--config\s)`).MatchString(cmd):
				runStorage, sawRun = storageOf(cmd), true
			case sawRun && regexp.MustCompile(`(^|[\s/])bench (results|show|confirm|report|plot|export)\b`).MatchString(cmd):
				if got := storageOf(cmd); got != runStorage {
					t.Errorf("%s:%d: %q reads storage %q, but the run above wrote to %q", file, n+1, cmd, got, runStorage)
				}
			}
		}
	}
}

// bench show of a trial the experiment does not have says so once, in the
// words bench submit and bench plot use.
func TestShowMissingTrial(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1", "--experiment_id", "E"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "show", "99")
	if r.code != 2 || strings.TrimSpace(r.stderr) != "bench: error: experiment E has no trial 99" {
		t.Errorf("bench show 99: exit %d, want 2 and one plain line:\n%s", r.code, r.stderr)
	}
}

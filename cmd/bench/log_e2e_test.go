package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The terminal has one format for every line (warnings included), and
// --log_file has mlos_bench's lines that its users grep for.
func TestLogFormats(t *testing.T) {
	dir := experiment(t, `[ "$trial_id" = 2 ] && exit 1`)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "LOG",
		"--max_suggestions", "3", "--max_retries", "1", "--log_file", "bench.log", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "bench: warning: trial failed; retrying it trial=2 ") {
		t.Errorf("stderr lacks the retry warning in the terminal format:\n%s", r.stderr)
	}
	// The failure's reason is printed once: on trial 2's line, not again
	// by the retry warning or the environment.
	if n := strings.Count(r.stderr, "exited with code 1"); n != 1 {
		t.Errorf("the failure is printed %d times:\n%s", n, r.stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(l, "bench: ") || strings.Contains(l, "level=") || strings.Contains(l, "time=") {
			t.Errorf("stderr line %q is not in the terminal format", l)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "bench.log"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	// The first pattern is mlos_bench's own launcher test's, but for the
	// file name (bench's source file is not run.py).
	date := `\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}`
	for _, re := range []string{
		`(?m)^` + date + ` \S+\.go:\d+ \S+ INFO Final score: \{'score': \d+\.\d+\}\s*$`,
		`(?m)^` + date + ` \S+ \S+ INFO QUEUE: Execute trial # 1/-1 :: LOG:1:1:1$`,
		`(?m)^` + date + ` \S+ \S+ INFO QUEUE: Execute trial # 4/-1 :: LOG:4:\d+:1$`,
		`(?m)^` + date + ` \S+ \S+ INFO Iteration 1 :: Register: \{ g::mode\[categorical\]\(\['a', 'b'\]:a\)=a, g::xv\[int\]\(\(0, 100\):50\)=50 \} = Status\.SUCCEEDED score: \{'score': 400\}$`,
		`(?m)^` + date + ` \S+ \S+ WARNING trial failed; retrying it trial=2 `,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("log file lacks a line matching %s:\n%s", re, text)
		}
	}
	if strings.Contains(text, "level=") || strings.Contains(text, "msg=") {
		t.Errorf("log file has slog text lines:\n%s", text)
	}
}

// The closing hint names a command that works: with in-memory storage it
// says the results are gone, with --storage it names it.
func TestClosingHint(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "MEM", "--storage", "storage/in-memory.jsonc", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "bench: the results were kept in memory only and are gone now") || strings.Contains(r.stderr, "bench results") {
		t.Errorf("in-memory closing hint:\n%s", r.stderr)
	}
	write(t, dir, "my storage.jsonc", `{"class": "mlos_bench.storage.sql.storage.SqlStorage",
		"config": {"drivername": "sqlite", "database": "elsewhere.sqlite"}}`, 0o644)
	r = runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "FILE", "--storage", "my storage.jsonc", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`\(bench results --storage 'my storage.jsonc' --experiment FILE\)`).FindString(r.stderr)
	if m == "" {
		t.Fatalf("closing hint does not name the storage:\n%s", r.stderr)
	}
	// The hint's command works.
	r = runBench(t, dir, "results", "--storage", "my storage.jsonc", "--experiment", "FILE")
	if r.code != 0 || !strings.Contains(r.stdout, "SUCCEEDED") {
		t.Errorf("the hinted command failed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

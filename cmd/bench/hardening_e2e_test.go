package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWarnsDuplicateKeys: bench run warns about a key given twice, as
// bench validate does (file:line:col, JSON path, both places), and the
// last value wins, as in mlos_bench: here the second "optimization_targets"
// flips the target from min to max.
func TestRunWarnsDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "env.jsonc", "{\n  \"name\": \"dup\",\n  \"class\": \"mlos_bench.environments.local.LocalEnv\",\n  \"config\": {\"run\": [\"true\"],\n    \"run\": [\"echo score=1\"], \"results_stdout_pattern\": \"(score)=(\\\\d+)\"}\n}\n", 0o644)
	write(t, dir, "opt.jsonc", "{\n  \"class\": \"mlos_bench.optimizers.OneShotOptimizer\",\n  \"config\": {\n    \"optimization_targets\": {\"score\": \"min\"},\n    \"optimization_targets\": {\"score\": \"max\"}\n  }\n}\n", 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "DUP", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`bench: env.jsonc:5:5: /config/run: warning: duplicate key "run", first at env.jsonc:4:14; the last value wins (as in mlos_bench)`,
		`bench: opt.jsonc:5:5: /config/optimization_targets: warning: duplicate key "optimization_targets", first at opt.jsonc:4:5; the last value wins (as in mlos_bench)`,
	} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("stderr should say once:\n%s\ngot:\n%s", want, r.stderr)
		}
	}
	// The last value won: the run's output and a maximized target.
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dirn string
	if err := db.QueryRow(`SELECT optimization_direction FROM objectives WHERE exp_id = 'DUP'`).Scan(&dirn); err != nil {
		t.Fatal(err)
	}
	if dirn != "max" {
		t.Errorf("direction %q, want max (the last value wins)", dirn)
	}
	// bench validate says the same.
	v := runBench(t, dir, "validate", "env.jsonc")
	if !strings.Contains(v.stdout, `env.jsonc:5:5: /config/run: warning: duplicate key "run", first at env.jsonc:4:14; the last value wins (as in mlos_bench)`) {
		t.Errorf("validate: %s%s", v.stdout, v.stderr)
	}
}

// TestStoredOutputSecretCut: a secret printed across the point where
// captured output is cut (max_output_bytes 1024: 490 bytes of padding,
// then the secret, at the head's end; and at the tail's start) is not
// stored in part; and a global whose name looks secret but whose value is
// "true" does not blank every "true" out of the output and of bench's
// own warnings.
func TestStoredOutputSecretCut(t *testing.T) {
	const secret = "QwErTyUiOpAsDfGhJkLzXcVbN" // 25 characters
	dir := t.TempDir()
	write(t, dir, "globals.jsonc", `{"db_password": "`+secret+`"}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "cut",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {
			"const_args": {"db_password": "x"},
			"shell_env_params": ["db_password"],
			"max_output_bytes": 1024,
			"run": ["./head.sh", "./tail.sh", "echo 'it is true' score=1"],
			"results_stdout_pattern": "(score)=(\\d+)"
		}
	}`, 0o644)
	write(t, dir, "head.sh", "#!/bin/sh\nhead -c 490 /dev/zero | tr '\\0' .; printf %s \"$db_password\"; head -c 3000 /dev/zero | tr '\\0' .\n", 0o755)
	write(t, dir, "tail.sh", "#!/bin/sh\nhead -c 3000 /dev/zero | tr '\\0' .; printf %s \"$db_password\"; head -c 490 /dev/zero | tr '\\0' .\n", 0o755)
	r := runBench(t, dir, "--environment", "env.jsonc", "--globals", "globals.jsonc", "--experiment_id", "CUT", "--no-progress",
		"--ssh_insecure_ignore_host_key", "true")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "bench.sqlite*"))
	var stored strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stored.Write(b)
	}
	show := runBench(t, dir, "show", "1")
	for where, text := range map[string]string{"the database": stored.String(), "bench show": show.stdout, "stderr": r.stderr} {
		for i := 0; i+4 <= len(secret); i++ {
			if strings.Contains(text, secret[i:i+4]) {
				t.Errorf("%s holds part of the secret (%q)", where, secret[i:i+4])
				break
			}
		}
	}
	if !strings.Contains(show.stdout, "bytes of output omitted") || !strings.Contains(show.stdout, "[REDACTED]") {
		t.Errorf("bench show should show the cut output with the secret's parts redacted:\n%.3000s", show.stdout)
	}
	if !strings.Contains(show.stdout, "it is true") || strings.Contains(r.stderr, "[REDACTED]") {
		t.Errorf("a secret-looking global set to true redacted every \"true\":\nshow: %.2000s\nstderr: %s", show.stdout, r.stderr)
	}
}

// TestHostileResultsFileReason: a results file of 60 MB of NULs without a
// newline fails the trial with a short failure reason that names the
// file, line and byte offset, and bench's stderr stays small.
func TestHostileResultsFileReason(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "env.jsonc", `{
		"name": "nul",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {"run": ["head -c 60000000 /dev/zero > results.csv"], "read_results_file": "results.csv"}
	}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "NUL", "--no-progress")
	if r.code == 0 {
		t.Fatalf("the trial should fail\n%s", r.stderr)
	}
	if len(r.stderr) > 64<<10 || len(r.stdout) > 64<<10 {
		t.Errorf("stderr %d bytes, stdout %d bytes", len(r.stderr), len(r.stdout))
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var reason string
	if err := db.QueryRow(`SELECT failure_reason FROM trial WHERE exp_id = 'NUL'`).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if len(reason) > 4096 || !strings.Contains(reason, "results.csv: not a valid CSV file: line 1, byte offset 0: a NUL byte") {
		t.Errorf("failure_reason (%d bytes): %.500q", len(reason), reason)
	}
}

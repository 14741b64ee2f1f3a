package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsKeptSecret plants secrets (a parameter whose name looks
// secret, and one listed in "secret_params") and a script that prints
// them with set -x and fails with them in its stderr. The script gets the
// real values; nothing bench writes holds them: not its output, the log
// file, the error it exits with, the database or bench show.
func TestSecretsKeptSecret(t *testing.T) {
	const pw, lic = "hunter2-s3cr3t", "LIC-98765-XYZ"
	dir := t.TempDir()
	write(t, dir, "globals.jsonc", `{
		"experiment_id": "SEC",
		"db_password": "`+pw+`",
		"license_code": "`+lic+`",
		"secret_params": ["license_code"]
	}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "sec",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {
			"const_args": {"db_password": "placeholder", "license_code": "none", "marker_dir": "`+dir+`"},
			"shell_env_params": ["db_password", "license_code", "marker_dir"],
			"setup": ["'printf \"%s %s\" \"$db_password\" \"$license_code\" > \"$marker_dir/seen.txt\"'"],
			"run": ["run.sh $db_password"]
		}
	}`, 0o644)
	write(t, dir, "run.sh", "#!/bin/sh\nset -x\necho \"connecting with $db_password and $license_code\"\necho \"bad password $db_password for $license_code\" >&2\nexit 3\n", 0o755)

	r := runBench(t, dir, "--environment", "env.jsonc", "--globals", "globals.jsonc",
		"--log_level", "DEBUG", "--log_file", "bench.log", "--no-progress")
	if r.code == 0 {
		t.Fatalf("the failing trial should fail the run\n%s%s", r.stdout, r.stderr)
	}
	// The script got the real values.
	if seen, err := os.ReadFile(filepath.Join(dir, "seen.txt")); err != nil || string(seen) != pw+" "+lic {
		t.Fatalf("the script saw %q (%v), want the real secrets", seen, err)
	}
	check := func(where, text string) {
		t.Helper()
		for _, s := range []string{pw, lic} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q:\n%s", where, s, text)
			}
		}
	}
	check("bench's stdout", r.stdout)
	check("bench's stderr", r.stderr)
	if !strings.Contains(r.stderr, "[REDACTED]") {
		t.Errorf("stderr should show the failure with the secret replaced:\n%s", r.stderr)
	}
	logText, err := os.ReadFile(filepath.Join(dir, "bench.log"))
	if err != nil || len(logText) == 0 {
		t.Fatalf("log file: %v", err)
	}
	check("the log file", string(logText))
	files, _ := filepath.Glob(filepath.Join(dir, "bench.sqlite*"))
	if len(files) == 0 {
		t.Fatal("no database")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, string(data))
	}
	for _, args := range [][]string{{"show", "1"}, {"show", "1", "--format", "json"}, {"show", "1", "--globals", "globals.jsonc"}, {"results", "--format", "json"}} {
		r := runBench(t, dir, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		check(strings.Join(args, " "), r.stdout+r.stderr)
		if args[0] == "show" && !strings.Contains(r.stdout, "connecting with [REDACTED] and [REDACTED]") {
			t.Errorf("%v: the captured output should be kept with the secrets replaced:\n%s", args, r.stdout)
		}
	}
}

// TestInsecureSSHVisible turns host-key checking off from the command
// line (--ssh_insecure_ignore_host_key true overriding the service
// config's false: the text becomes the key's boolean) with the log level
// at ERROR: bench still says so on stderr, and records it with the
// experiment.
func TestInsecureSSHVisible(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ssh.jsonc", `{"class": "mlos_bench.services.remote.ssh.SshHostService",
		"config": {"ssh_insecure_ignore_host_key": false, "ssh_port": 22}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "ins",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_services": ["ssh.jsonc"],
		"config": {"run": ["echo score=1"], "results_stdout_pattern": "(score)=(\\d+)"}
	}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "INS", "--log_level", "ERROR", "--no-progress",
		"--ssh_insecure_ignore_host_key", "true", "--ssh_port", "2222")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	const notice = "SshHostService: SSH host key verification is OFF"
	if !strings.Contains(r.stderr, "bench: warning: "+notice) {
		t.Errorf("stderr does not say that host keys are not checked:\n%s", r.stderr)
	}
	r = runBench(t, dir, "results", "--list", "--format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"notes"`) || !strings.Contains(r.stdout, notice) {
		t.Errorf("results --list: the experiment does not record the notice:\n%s%s", r.stdout, r.stderr)
	}
	r = runBench(t, dir, "show", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Experiment note: "+notice) {
		t.Errorf("show 1:\n%s%s", r.stdout, r.stderr)
	}
	// Without the override, nothing is said.
	r = runBench(t, dir, "--environment", "env.jsonc", "--experiment_id", "SAFE", "--log_level", "ERROR", "--no-progress")
	if r.code != 0 || strings.Contains(r.stderr, notice) {
		t.Errorf("secure run: exit %d\n%s", r.code, r.stderr)
	}
}

// A key given twice in one object is accepted (the last value wins, as in
// mlos_bench), and bench validate warns with both places.
func TestValidateDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "env.jsonc", "{\n  \"name\": \"dup\",\n  \"class\": \"mlos_bench.environments.local.LocalEnv\",\n  \"config\": {\"run\": [\"true\"],\n    \"run\": [\"echo score=1\"]}\n}\n", 0o644)
	r := runBench(t, dir, "validate", "env.jsonc")
	want := `env.jsonc:5:5: /config/run: warning: duplicate key "run", first at env.jsonc:4:14; the last value wins (as in mlos_bench)`
	if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stderr, "1 warning") {
		t.Errorf("validate: exit %d\nstdout: %s\nstderr: %s\nwant: %s", r.code, r.stdout, r.stderr, want)
	}
	r = runBench(t, dir, "validate", "--format", "json", "env.jsonc")
	if r.code != 0 || !strings.Contains(r.stdout, `"warnings"`) || !strings.Contains(r.stdout, "first at env.jsonc:4:14") {
		t.Errorf("validate --format json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

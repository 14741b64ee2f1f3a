package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A typo of a bench ci option is an error (not a global), and an output
// path that cannot be written fails before the first trial runs.
func TestCIOptionTyposAndOutputPaths(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	write(t, dir, "env.jsonc", `{
		"name": "m",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {"run": ["touch '`+marker+`'; echo v=1"], "results_stdout_pattern": "(v)=(\\d+)"}
	}`, 0o644)
	write(t, dir, "th.jsonc", `{"metrics": {"v": {"max_increase": "5%"}}}`, 0o644)
	base := []string{"ci", "--environment", "env.jsonc", "--thresholds", "th.jsonc", "--no-progress"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeats", "8"}, "unknown option --repeats: did you mean --repeat?"},
		{[]string{"--Repeat=8"}, "did you mean --repeat?"},
		{[]string{"--thresholdz", "th.jsonc"}, "did you mean --thresholds?"},
		{[]string{"--junit-xml", "x.xml"}, ""}, // far from every option: a global
		{[]string{"--junit", filepath.Join(dir, "no", "such", "dir", "j.xml")}, "--junit " + filepath.Join(dir, "no", "such", "dir", "j.xml") + ": the file cannot be created"},
		{[]string{"--json", dir}, "is a folder, not a file"},
		{[]string{"--u-test", "exact"}, `unknown Mann–Whitney method "exact"`},
	} {
		os.Remove(marker)
		r := runBench(t, dir, append(append([]string(nil), base...), tc.args...)...)
		if tc.want == "" {
			if r.code != 0 {
				t.Errorf("%v: exit %d\n%s", tc.args, r.code, r.stderr)
			}
			continue
		}
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", tc.args, r.code, tc.want, r.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%v: a trial ran before the error", tc.args)
		}
	}
}

// bench ci gates results it did not run (--current), records them in a
// history file, and shows the history with bench ci history.
func TestCIImportHistoryAndIntegrations(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"old.txt", "new.txt", "same.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "ci", "testdata", "gobench", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, f, string(b), 0o644)
	}
	write(t, dir, "th.jsonc", `{"metrics": {"sec/op": {"max_increase": "10%"}}}`, 0o644)
	gate := []string{"ci", "--thresholds", "th.jsonc", "--baseline", "old.txt", "--history", "h.jsonl", "--testbed", "dev", "--branch", "main"}
	r := runBench(t, dir, append(gate, "--current", "new.txt", "--commit", "c1", "--github-annotations", "--pr-comment", "pr.md")...)
	if r.code != 1 || !strings.Contains(r.stdout, "::error title=bench ci%3A REGRESSION sec/op [Sort-2]::") || !strings.Contains(r.stderr, "REGRESSION   sec/op [Sort-2]: +76.64%") {
		t.Errorf("go test -bench files: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pr, _ := os.ReadFile(filepath.Join(dir, "pr.md"))
	if listed, _, _ := strings.Cut(string(pr), "<details>"); !strings.Contains(listed, "| ❌ | Sort-2 | `sec/op` |") || !strings.Contains(listed, "| 🟢 | Same-2 |") {
		t.Errorf("PR comment:\n%s", pr)
	}
	r = runBench(t, dir, append(gate, "--current", "same.txt", "--commit", "c2")...)
	if r.code != 1 || !strings.Contains(r.stderr, "recorded this run in h.jsonl (commit c2, branch main, testbed \"dev\")") {
		t.Errorf("second run: exit %d\n%s", r.code, r.stderr)
	}
	r = runBench(t, dir, "ci", "history", "sec/op", "--history", "h.jsonl", "--config", "Same-2")
	if r.code != 0 || !strings.Contains(r.stdout, "sec/op [Same-2]: 2 runs") || !strings.Contains(r.stdout, "c1") || !strings.Contains(r.stdout, "no change point") {
		t.Errorf("history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "ci", "history", "sec/op", "--history", "h.jsonl", "--plot", "h.svg", "--format", "json")
	if b, err := os.ReadFile(filepath.Join(dir, "h.svg")); r.code != 0 || err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(r.stdout, `"change_points": null`) {
		t.Errorf("history --plot: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	// Judged against the history alone (no --baseline): new.txt's Sort-2
	// against the medians of the 2 runs so far cannot decide (2 values).
	r = runBench(t, dir, "ci", "--thresholds", "th.jsonc", "--current", "new.txt", "--history", "h.jsonl", "--history-window", "5", "--allow-insufficient")
	if r.code != 0 || !strings.Contains(r.stdout, "history (last 2 runs)") {
		t.Errorf("against history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "ci", "history", "nope", "--history", "h.jsonl")
	if r.code != 2 || !strings.Contains(r.stderr, `no recorded run has metric "nope"`) {
		t.Errorf("unknown metric: exit %d %s", r.code, r.stderr)
	}
	r = runBench(t, dir, "ci", "--thresholds", "th.jsonc", "--current", "new.txt")
	if r.code != 2 || !strings.Contains(r.stderr, "--current FILE needs --baseline") {
		t.Errorf("--current alone: exit %d %s", r.code, r.stderr)
	}
}

// A/B in one job: two commands, and two configurations of an environment.
func TestCIABInOneJob(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "th.jsonc", `{"metrics": {"wall_s": {"max_increase": "10%"}}}`, 0o644)
	r := runBench(t, dir, "ci", "--thresholds", "th.jsonc", "--baseline-command", "sleep 0.01", "--candidate-command", "sleep 0.08",
		"--repeat", "6", "--ab-order", "random", "--no-progress")
	if r.code != 1 || !strings.Contains(r.stderr, "A/B in one job: 6 blocks of baseline and candidate, order random") || !strings.Contains(r.stderr, "REGRESSION   wall_s [A/B]") {
		t.Errorf("A/B commands: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "ci", "--thresholds", "th.jsonc", "--baseline-command", "sleep 0.01", "--candidate-command", "sleep 0.08", "--repeat", "auto", "--max-repeat", "10")
	if r.code != 1 || !strings.Contains(r.stderr, "look 1 of 2 at n=6 per side") || !strings.Contains(r.stderr, "--repeat auto ran") {
		t.Errorf("A/B --repeat auto: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "ci", "--thresholds", "th.jsonc", "--baseline-command", "true", "--candidate-command", "true", "--baseline", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "an A/B job measures its own baseline") {
		t.Errorf("A/B with --baseline: exit %d %s", r.code, r.stderr)
	}
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "ab",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "shell_env_params": ["xv"],
			"run": ["echo \"v=$xv\""], "results_stdout_pattern": "(v)=(\\d+)"}
	}`, 0o644)
	write(t, dir, "a.jsonc", `{"xv": 10}`, 0o644)
	write(t, dir, "b.jsonc", `{"xv": 20}`, 0o644)
	write(t, dir, "thv.jsonc", `{"metrics": {"v": {"max_increase": "5%"}}}`, 0o644)
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--baseline-config", "a.jsonc", "--candidate-config", "b.jsonc",
		"--repeat", "5", "--ab-order", "alternate", "--ab-test", "unpaired", "--save-as", "ab", "--no-progress")
	if r.code != 1 || !strings.Contains(r.stderr, "REGRESSION   v [b.jsonc]: +100.00%") {
		t.Errorf("A/B configs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "results", "--experiment", "ab", "--format", "csv")
	var order []string
	for _, row := range csvRows(t, r.stdout) {
		order = append(order, row["config.xv"])
	}
	if got := strings.Join(order, " "); got != "10 20 10 20 10 20 10 20 10 20" {
		t.Errorf("A/B configs ran %q, want interleaved", got)
	}
}
